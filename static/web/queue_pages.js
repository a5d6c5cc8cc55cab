// Queue page, progressive enhancement only: the page works without it.
// 1. "Add a row" buttons clone the formset's last (empty) row and bump TOTAL_FORMS.
// 2. Live updates (live.js) of the task and ask lists keep the page's sort order and page.
(function () {
  "use strict";

  function addRow(prefix) {
    var table = document.querySelector('table.rows[data-formset="' + prefix + '"]');
    var total = document.getElementById("id_" + prefix + "-TOTAL_FORMS");
    if (!table || !total) return;
    var rows = table.querySelectorAll("tbody tr.formset-row");
    var last = rows[rows.length - 1];
    var index = parseInt(total.value, 10);
    var copy = last.cloneNode(true);
    var pattern = new RegExp(prefix + "-\\d+-", "g");
    copy.querySelectorAll("input, label").forEach(function (el) {
      ["id", "name", "for"].forEach(function (attr) {
        var value = el.getAttribute(attr);
        if (value) el.setAttribute(attr, value.replace(pattern, prefix + "-" + index + "-"));
      });
      if (el.tagName === "INPUT") el.value = "";
      if (el.tagName === "LABEL") el.textContent = el.textContent.replace(/ of .*$/, " (new row)");
    });
    copy.querySelectorAll(".field-error").forEach(function (el) { el.remove(); });
    last.parentNode.appendChild(copy);
    total.value = String(index + 1);
    var first = copy.querySelector("input");
    if (first) first.focus();
  }

  document.querySelectorAll("button.add-row").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { addRow(button.dataset.formset); });
  });

  // Mark inputs that carry an error for assistive technology.
  document.querySelectorAll(".field-error").forEach(function (error, i) {
    var input = error.parentNode.querySelector("input, textarea, select");
    if (!input) return;
    error.id = error.id || "field-error-" + i;
    input.setAttribute("aria-invalid", "true");
    input.setAttribute("aria-describedby", error.id);
  });

  if (window.consoleLive) {
    window.consoleLive.params(function () {
      return [["page_query", window.location.search.slice(1)]];
    });
  }
})();
