// Material for MkDocs' inline content script, from a file (see docs-start.js): when the URL's
// #anchor names a content tab, open that tab.
(function () {
  "use strict";
  var target = document.getElementById(location.hash.slice(1));
  if (target && target.name) {
    target.checked = target.name.indexOf("__tabbed_") === 0;
  }
})();
