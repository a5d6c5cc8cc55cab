/* Fences page: picking a queue swaps the summary and tree in place instead of reloading.
   The links are plain links to the same page (?partition=&queue=), so without this script, or
   when the fetch fails, the browser simply follows them. */
(function () {
  "use strict";
  var view = document.getElementById("fence-view");
  if (!view || !window.fetch || !window.DOMParser) {
    return;
  }

  function pickLink(path) {
    var rows = view.querySelectorAll("li[data-path]");
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-path") === path) {
        return rows[i].querySelector(":scope > .q-row a.pick");
      }
    }
    return null;
  }

  function syncSelect(url) {
    var select = document.getElementById("fence-queue");
    if (select) {
      select.value = new URL(url, window.location.href).searchParams.get("queue") || "";
    }
  }

  function load(url, push, focusPath) {
    view.setAttribute("aria-busy", "true");
    fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("HTTP " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("fence-view");
        if (!fresh) {
          throw new Error("no fence view in the answer");
        }
        view.innerHTML = fresh.innerHTML;
        view.removeAttribute("aria-busy");
        if (push) {
          window.history.pushState({ fences: true }, "", url);
        }
        syncSelect(url);
        var link = focusPath ? pickLink(focusPath) : null;
        if (link) {
          link.focus({ preventScroll: true });
        }
      })
      .catch(function () {
        window.location.href = url;
      });
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.pick") : null;
    if (!link || !view.contains(link) || event.button !== 0 ||
        event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) {
      return;
    }
    event.preventDefault();
    load(link.href, true, link.closest("li").getAttribute("data-path"));
  });

  window.addEventListener("popstate", function () {
    load(window.location.href, false, null);
  });
})();
