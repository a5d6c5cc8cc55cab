// Times in the viewer's own time zone. The server writes every time as
// <time class="local-time" datetime="ISO, UTC" data-precision="second|minute" title="... UTC">
// (templatetags/humanise.py); this rewrites the text into the browser's zone, with the zone's
// short name ("2026-03-01 13:00:00 GMT+1"), and leaves the UTC reading as the tooltip. Parts of a
// page that live updates put in later are rewritten too. Without JavaScript the UTC text stays.
(function () {
  "use strict";
  var formats = {};

  function formatter(precision) {
    if (!formats[precision]) {
      var options = {
        year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
        hourCycle: "h23", timeZoneName: "short"
      };
      if (precision !== "minute") { options.second = "2-digit"; }
      formats[precision] = new Intl.DateTimeFormat("en-US", options);
    }
    return formats[precision];
  }

  function localise(el) {
    var moment = new Date(el.getAttribute("datetime"));
    if (isNaN(moment.getTime())) { return; }
    var parts = {};
    formatter(el.getAttribute("data-precision") || "second").formatToParts(moment)
      .forEach(function (part) { parts[part.type] = part.value; });
    var text = parts.year + "-" + parts.month + "-" + parts.day + " " + parts.hour + ":" + parts.minute +
      (parts.second ? ":" + parts.second : "") + " " + parts.timeZoneName;
    if (el.textContent !== text) { el.textContent = text; }
    el.setAttribute("data-localised", "");
  }

  function localiseWithin(root) {
    if (root.matches && root.matches("time.local-time")) { localise(root); }
    if (root.querySelectorAll) { root.querySelectorAll("time.local-time").forEach(localise); }
  }

  localiseWithin(document);
  new MutationObserver(function (changes) {
    changes.forEach(function (change) { change.addedNodes.forEach(localiseWithin); });
  }).observe(document.body, { childList: true, subtree: true });
})();
