// Long operations show progress: a form marked data-busy-text (simulator, preview, revert,
// imports) shows that text with the seconds elapsed while the server works, and ignores a second
// submit. Buttons stay enabled so the pressed one still sends its name and value.
(function () {
  "use strict";
  document.querySelectorAll("form[data-busy-text]").forEach(function (form) {
    var status = document.createElement("p");
    status.className = "busy-status";
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    form.appendChild(status);
    var sent = false;
    var ticking = null;
    form.addEventListener("submit", function (event) {
      if (sent) { event.preventDefault(); return; }
      sent = true;
      form.setAttribute("aria-busy", "true");
      var started = Date.now();
      var text = form.dataset.busyText;
      status.textContent = text;
      ticking = setInterval(function () {
        var seconds = Math.round((Date.now() - started) / 1000);
        status.textContent = text + " " + seconds + " s";
      }, 1000);
    });
    // Coming back with the browser's Back button restores the page from cache: reset it.
    window.addEventListener("pageshow", function () {
      sent = false;
      clearInterval(ticking);
      form.removeAttribute("aria-busy");
      status.textContent = "";
    });
  });
})();
