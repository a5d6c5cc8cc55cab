"""``childtemplate``: the max applications, properties and resources YuniKorn gives the queues
it creates below a parent."""

from __future__ import annotations

from collections.abc import Mapping

from preemption.yunikorn_rules.properties import PropertyRules
from preemption.yunikorn_rules.wording import joined, quantity_text, shown

TEMPLATE_KEYS = ("maxapplications", "properties", "resources")
TEMPLATE_RESOURCE_KEYS = ("guaranteed", "max")


class ChildTemplateRules(PropertyRules):
    """A parent queue's ``childtemplate``."""

    def _child_template(self, owner: str, value: object, *, is_parent: bool | None) -> None:
        at = "extra.childtemplate"
        template = self._fields(owner, at, value, TEMPLATE_KEYS, "a child template")
        if template is None:
            return
        if template and is_parent is False:
            self.warn(
                owner,
                at,
                "YuniKorn ignores a child template on a leaf queue: set parent: true or add "
                "child queues",
            )
        self._count(owner, f"{at}.maxapplications", template.get("maxapplications"))
        properties = template.get("properties")
        if properties is not None:
            self._template_properties(owner, f"{at}.properties", properties)
        block = self._fields(
            owner, f"{at}.resources", template.get("resources"), TEMPLATE_RESOURCE_KEYS, "resources"
        )
        if not block:
            return
        guaranteed = self._quantities(owner, f"{at}.resources.guaranteed", block.get("guaranteed"))
        maximum = self._quantities(owner, f"{at}.resources.max", block.get("max"))
        if guaranteed is None or maximum is None:
            return
        for name, amount in sorted(guaranteed.items()):
            if name in maximum and amount > maximum[name]:
                self.error(
                    owner,
                    f"{at}.resources.guaranteed.{name}",
                    f"guaranteed {quantity_text(name, amount)} is above the template's max "
                    f"{quantity_text(name, maximum[name])}",
                )

    def _template_properties(self, owner: str, at: str, value: object) -> None:
        """A Go ``map[string]string``: text values (a whole number is fine: it reads the same)."""
        if not isinstance(value, Mapping):
            self.error(
                owner, at, f"must be a mapping of property name to value, not {shown(value)}"
            )
            return
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                self.error(owner, at, f"property names must be non-empty text, not {shown(key)}")
            elif isinstance(item, bool | float):
                self.error(
                    owner,
                    joined(at, key),
                    f"must be text, not {shown(item)}: put it in quotes",
                )
            elif isinstance(item, int) and item.bit_length() > 64:
                self.error(owner, joined(at, key), f"{shown(item)} is too large a number")
            elif not isinstance(item, str | int):
                self.error(owner, joined(at, key), f"must be text, not {shown(item)}")
        self._properties(owner, at, value)
