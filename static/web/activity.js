/* Audit exports with progress (SPEC 8: long operations show progress).
 *
 * Without JavaScript the export links are plain downloads of /api/v1/audit/export.* with the
 * page's filters. With it, a click fetches the same URL as a stream, reports the bytes and
 * events received so far (the page knows how many events match), and then saves the whole body
 * through a Blob download link. A failed export shows the API's message instead of a broken
 * file; "Cancel export" aborts the request.
 */
(function () {
  "use strict";

  var box = document.querySelector(".activity-exports");
  if (!box || !window.fetch || !window.ReadableStream || !window.AbortController) {
    return; // the plain links still work
  }
  var status = document.querySelector(".activity-progress");
  var cancel = box.querySelector(".activity-cancel");
  var links = Array.prototype.slice.call(box.querySelectorAll("a[data-export]"));
  var total = Number(box.getAttribute("data-total")) || 0;
  var controller = null;

  function size(bytes) {
    if (bytes >= 1048576) return (bytes / 1048576).toFixed(1) + " MB";
    if (bytes >= 1024) return (bytes / 1024).toFixed(1) + " KB";
    return bytes + " bytes";
  }

  function fileName(response, extension) {
    var header = response.headers.get("Content-Disposition") || "";
    var match = /filename="?([^";]+)"?/.exec(header);
    return match ? match[1] : "audit." + extension;
  }

  // CSV: one line per event after the header; JSON: one event per line. Summaries rarely hold
  // line breaks, so the count is "about" and never shown above the number that matched.
  function events(newlines, extension) {
    var counted = extension === "csv" ? Math.max(0, newlines - 1) : newlines;
    return Math.min(counted, total);
  }

  function describe(extension, bytes, newlines) {
    if (extension === "pdf") return size(bytes) + " received";
    return "about " + events(newlines, extension).toLocaleString() + " of " +
      total.toLocaleString() + " events, " + size(bytes) + " received";
  }

  function setBusy(busy) {
    links.forEach(function (link) {
      if (busy) link.setAttribute("aria-disabled", "true");
      else link.removeAttribute("aria-disabled");
    });
    cancel.hidden = !busy;
  }

  async function failure(response) {
    var text = "HTTP " + response.status;
    try {
      var body = await response.json();
      if (body && body.detail) text += ": " + body.detail;
      if (body && body.errors) text += " " + JSON.stringify(body.errors);
    } catch (ignored) { /* not JSON */ }
    return text;
  }

  function save(blob, name) {
    var url = URL.createObjectURL(blob);
    var anchor = document.createElement("a");
    anchor.href = url;
    anchor.download = name;
    anchor.hidden = true;
    document.body.appendChild(anchor);
    anchor.click();
    anchor.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 60000);
  }

  async function download(link) {
    var extension = link.getAttribute("data-export");
    var bytes = 0;
    var newlines = 0;
    var shownAt = 0;
    controller = new AbortController();
    setBusy(true);
    status.textContent = "Starting the " + extension.toUpperCase() + " export…";
    try {
      var response = await fetch(link.href, { credentials: "same-origin", signal: controller.signal });
      if (!response.ok) {
        status.textContent = "The export failed (" + (await failure(response)) + ").";
        return;
      }
      var reader = response.body.getReader();
      var chunks = [];
      for (;;) {
        var step = await reader.read();
        if (step.done) break;
        chunks.push(step.value);
        bytes += step.value.length;
        for (var i = 0; i < step.value.length; i++) {
          if (step.value[i] === 10) newlines++;
        }
        var now = Date.now();
        if (now - shownAt > 250) { // a live region read out on every chunk is noise
          shownAt = now;
          status.textContent = "Exporting: " + describe(extension, bytes, newlines) + "…";
        }
      }
      var name = fileName(response, extension);
      save(new Blob(chunks, { type: response.headers.get("Content-Type") || "" }), name);
      status.textContent = "Saved " + name + ": " + describe(extension, bytes, newlines) + ".";
    } catch (error) {
      status.textContent = error.name === "AbortError"
        ? "Export cancelled."
        : "The export failed: " + error.message;
    } finally {
      controller = null;
      setBusy(false);
    }
  }

  links.forEach(function (link) {
    link.addEventListener("click", function (event) {
      if (event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return; // let the browser handle it
      event.preventDefault();
      if (!controller) download(link);
    });
  });
  cancel.addEventListener("click", function () {
    if (controller) controller.abort();
  });
})();
