// Copy buttons for what a page shows only once (a new password or API token, the command that
// uses it): <button type="button" class="copy" data-copy="ID"> copies the value of the input, or
// the text of the element, with that id, and says so in the status next to it. Where the
// clipboard is out of reach (plain http to a remote host) the text is selected instead, ready for
// Ctrl+C, and the status says that.
(function () {
  "use strict";
  function selectText(target) {
    if (target.select) { target.select(); return; }
    var range = document.createRange();
    range.selectNodeContents(target);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  document.querySelectorAll("button.copy[data-copy]").forEach(function (button) {
    var target = document.getElementById(button.getAttribute("data-copy"));
    if (!target) { return; }
    var status = document.createElement("span");
    status.className = "copy-status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    button.insertAdjacentElement("afterend", status);
    button.hidden = false;
    button.addEventListener("click", function () {
      var text = target.value !== undefined ? target.value : target.textContent;
      function selected() {
        selectText(target);
        status.textContent = "Selected: press Ctrl+C (⌘C) to copy";
      }
      if (!navigator.clipboard || !window.isSecureContext) { selected(); return; }
      navigator.clipboard.writeText(text).then(function () {
        status.textContent = "Copied";
      }, selected);
    });
  });
})();
