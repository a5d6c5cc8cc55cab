/* Countdowns and live updates of the console's pages (plain JS, no framework).

   Countdowns: every <time class="countdown" data-due-at="ISO time"> ticks each second in the
   server's words ("due in 1m30s", then "due now"), counted from the server's clock at render
   time (data-server-now on this script), so a client clock that is off does not matter. Ages
   (<time class="age" data-since="ISO time">, "12s ago") tick the same way.

   Live updates, when this script has data-live-url (scheduler_admin/web/live/views.py says why
   polling): the page asks that JSON document every few seconds and patches itself in place.
   - It sends the last version in If-None-Match: an unchanged state costs a 304 and no body.
   - It pauses while the tab is hidden and asks at once when the tab shows again.
   - After a failure it waits twice as long each time (up to a minute) and says so; signed out
     (401) or gone (404) stops it, with the reason.
   - Each [data-live-section=NAME] element gets html.sections[NAME] when that changed; a control
     that had the focus inside it gets it back.
   - A changed config version (data-live-config) offers a reload: queues may have come or gone.
   - Pages add their own parts through window.consoleLive: params(fn) returns extra query
     parameters as [name, value] pairs for each poll, onUpdate(fn) receives each new document,
     refresh() asks now.
   Without JavaScript the pages show what the server rendered, and a reload updates them. */
(function () {
  "use strict";

  var script = document.currentScript;
  var serverNow = Date.parse(script.getAttribute("data-server-now") || "");
  var skew = isNaN(serverNow) ? 0 : serverNow - Date.now();
  var INTERVAL = 5000;
  var MAX_DELAY = 60000;

  function formatDuration(seconds) {
    var hours = Math.floor(seconds / 3600);
    var minutes = Math.floor((seconds % 3600) / 60);
    var secs = seconds % 60;
    return (hours ? hours + "h" : "") + (minutes ? minutes + "m" : "") + (secs ? secs + "s" : "");
  }

  /* Same words as the server (dashboard.tree.Timer.text). */
  function tick(el) {
    var due = Date.parse(el.getAttribute("data-due-at"));
    if (isNaN(due)) {
      return;
    }
    var seconds = Math.ceil((due - (Date.now() + skew)) / 1000);
    var text = seconds > 0 ? "due in " + formatDuration(seconds) : "due now";
    if (el.textContent !== text) {
      el.textContent = text;
    }
  }

  /* Same words as the server's `ago` filter (templatetags/console.py). */
  function tickAge(el) {
    var since = Date.parse(el.getAttribute("data-since"));
    if (isNaN(since)) {
      return;
    }
    var seconds = Math.max(0, Math.floor((Date.now() + skew - since) / 1000));
    var text = (formatDuration(seconds) || "0s") + " ago";
    if (el.textContent !== text) {
      el.textContent = text;
    }
  }

  function tickAll() {
    document.querySelectorAll(".countdown[data-due-at]").forEach(tick);
    document.querySelectorAll(".age[data-since]").forEach(tickAge);
  }

  var paramSources = [];
  var listeners = [];
  var timer = null;
  var url = script.getAttribute("data-live-url");

  window.consoleLive = {
    params: function (fn) { paramSources.push(fn); },
    onUpdate: function (fn) { listeners.push(fn); },
    refresh: function () {
      if (url) {
        schedule(0);
      }
    },
  };

  tickAll();
  window.setInterval(tickAll, 1000);
  if (!url) {
    return;
  }

  var config = script.getAttribute("data-live-config");
  var status = document.querySelector("[data-live-status]");
  var clock = null;
  var notice = null;
  if (status) {
    clock = status.appendChild(document.createElement("span"));
    notice = status.appendChild(document.createElement("span"));
    notice.className = "live-notice";
  }
  var etag = null;
  var failures = 0;
  var busy = false;
  var stopped = false;
  var applied = {}; // section name -> the HTML last put in place

  function say(text, problem) {
    if (!status) {
      return;
    }
    status.hidden = false;
    clock.textContent = text;
    clock.className = problem ? "error" : "";
  }

  function time() {
    return new Date().toLocaleTimeString([], { hourCycle: "h23" });
  }

  function schedule(delay) {
    window.clearTimeout(timer);
    if (!stopped && !document.hidden) {
      timer = window.setTimeout(poll, delay);
    }
  }

  function pollUrl() {
    var parts = url.split("?");
    var query = new URLSearchParams(parts[1] || "");
    paramSources.forEach(function (source) {
      source().forEach(function (pair) {
        query.append(pair[0], pair[1]);
      });
    });
    return parts[0] + "?" + query.toString();
  }

  function Stop(message) {
    this.message = message;
  }

  function poll() {
    if (busy || stopped) {
      return;
    }
    busy = true;
    var headers = { Accept: "application/json" };
    if (etag) {
      headers["If-None-Match"] = etag;
    }
    // A conditional request the page makes itself bypasses the HTTP cache, so a 304 arrives here.
    fetch(pollUrl(), { headers: headers, credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (response.status === 304) {
          return null;
        }
        if (response.status === 401 || response.status === 403 || response.status === 404) {
          return response.json().catch(function () { return {}; }).then(function (body) {
            throw new Stop(body.detail || "the server answered " + response.status);
          });
        }
        if (!response.ok) {
          throw new Error("the server answered " + response.status);
        }
        etag = response.headers.get("ETag");
        return response.json();
      })
      .then(function (data) {
        busy = false;
        failures = 0;
        if (data) {
          apply(data);
        }
        say("Updates live · checked " + time());
        schedule(INTERVAL);
      })
      .catch(function (error) {
        busy = false;
        if (error instanceof Stop) {
          stopped = true;
          say("Live updates stopped: " + error.message, true);
          return;
        }
        failures += 1;
        var delay = Math.min(MAX_DELAY, INTERVAL * Math.pow(2, failures));
        var why = error instanceof TypeError ? "the server did not answer" : error.message;
        say("Live updates paused: " + why + "; trying again in " + Math.round(delay / 1000) + " s.", true);
        schedule(delay);
      });
  }

  /* A key to find the focused control again in new HTML: its tag, text, link and table row. */
  function focusKey(holder) {
    var el = document.activeElement;
    if (!el || el === holder || !holder.contains(el)) {
      return null;
    }
    var row = el.closest("[data-path]");
    return {
      tag: el.tagName,
      text: el.textContent,
      href: el.getAttribute("href"),
      path: row ? row.getAttribute("data-path") : null,
    };
  }

  function refocus(holder, key) {
    var found = Array.prototype.find.call(holder.querySelectorAll(key.tag), function (el) {
      var row = el.closest("[data-path]");
      return el.textContent === key.text && el.getAttribute("href") === key.href &&
        (row ? row.getAttribute("data-path") : null) === key.path;
    });
    if (!found) {
      // The control is gone (a cancelled timer's button, say): keep the place in the page.
      holder.setAttribute("tabindex", "-1");
      found = holder;
    }
    found.focus();
  }

  function apply(data) {
    var sections = (data.html && data.html.sections) || {};
    Object.keys(sections).forEach(function (name) {
      var holder = document.querySelector('[data-live-section="' + name + '"]');
      if (!holder || applied[name] === sections[name]) {
        return;
      }
      var key = focusKey(holder);
      holder.innerHTML = sections[name];
      applied[name] = sections[name];
      if (key) {
        refocus(holder, key);
      }
    });
    listeners.forEach(function (listener) {
      listener(data);
    });
    if (notice && config !== null && String(data.config_version) !== config && !notice.firstChild) {
      notice.append(" · The configuration changed since this page was loaded: ");
      var reload = notice.appendChild(document.createElement("a"));
      reload.href = window.location.href;
      reload.textContent = "reload to see it";
      notice.append(".");
    }
    tickAll();
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      window.clearTimeout(timer);
    } else {
      schedule(0);
    }
  });
  schedule(INTERVAL);
})();
