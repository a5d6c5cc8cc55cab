// Simulator page, progressive enhancement: show only the fieldsets of the chosen policy.
// Without JS every fieldset stays visible and the server ignores the ones that do not apply.
(function () {
  "use strict";
  var radios = document.querySelectorAll('.sim-form input[name="policy"]');
  function update() {
    var chosen = document.querySelector('.sim-form input[name="policy"]:checked');
    var policy = chosen ? chosen.value : "quota";
    document.querySelectorAll(".sim-form fieldset[data-policy]").forEach(function (set) {
      set.hidden = set.dataset.policy !== policy;
    });
  }
  radios.forEach(function (radio) { radio.addEventListener("change", update); });
  update();
})();
