// The globals Material for MkDocs defines in an inline <script> at the top of every page
// (partials/javascripts/base.html), defined from this file instead: the product serves the docs
// under a Content-Security-Policy that allows scripts from its own origin only. Same behaviour:
// a storage scope for the site (the data-md-scope attribute: the site's base URL) and helpers
// to read and write the theme's preferences in it.
(function () {
  "use strict";
  var scope = document.currentScript.getAttribute("data-md-scope") || ".";
  window.__md_scope = new URL(scope, location);
  window.__md_hash = function (value) {
    return Array.from(value).reduce(function (hash, ch) {
      return (hash << 5) - hash + ch.charCodeAt(0);
    }, 0);
  };
  window.__md_get = function (key, storage, base) {
    storage = storage || localStorage;
    base = base || window.__md_scope;
    return JSON.parse(storage.getItem(base.pathname + "." + key));
  };
  window.__md_set = function (key, value, storage, base) {
    storage = storage || localStorage;
    base = base || window.__md_scope;
    try {
      storage.setItem(base.pathname + "." + key, JSON.stringify(value));
    } catch (error) {
      // storage full or refused: preferences are not kept, nothing else changes
    }
  };
})();
