/* Dashboard enhancements (plain JS, no framework):
   - the queue tree as a WAI-ARIA treegrid: one tab stop, arrow keys move, Right/Left expand and
     collapse, Enter follows the queue link; children are fetched once from the fragment endpoint;
   - live updates of the tree's rows (live.js polls; this script says which queues are open and
     patches their rows' cells in place, leaving expansion and focus alone).
   Countdowns tick in live.js. Without JavaScript the page still works: expanders are links that
   reload with ?open=, and a reload shows the current state. */
(function () {
  "use strict";

  var live = window.consoleLive;

  function level(row) {
    return parseInt(row.getAttribute("aria-level"), 10) || 1;
  }

  function isParent(row) {
    return row.hasAttribute("aria-expanded");
  }

  function isOpen(row) {
    return row.getAttribute("aria-expanded") === "true";
  }

  /* Rows that follow `row` and sit deeper in the tree: its loaded descendants. */
  function descendants(row) {
    var out = [];
    var depth = level(row);
    for (var next = row.nextElementSibling; next && level(next) > depth; next = next.nextElementSibling) {
      out.push(next);
    }
    return out;
  }

  function visibleRows(tbody) {
    return Array.prototype.filter.call(tbody.querySelectorAll("tr[role='row']"), function (row) {
      return !row.hidden;
    });
  }

  function setToggle(row, open) {
    row.setAttribute("aria-expanded", open ? "true" : "false");
    var toggle = row.querySelector(".toggle");
    if (toggle) {
      toggle.firstElementChild.textContent = open ? "▾" : "▸";
      var name = row.querySelector(".queue-link").textContent.replace(/\/$/, "");
      toggle.setAttribute("aria-label", (open ? "Collapse " : "Expand ") + name);
    }
  }

  /* Show the loaded descendants of an opened row, keeping closed sub-branches hidden. */
  function reveal(row) {
    var closedBelow = null;
    descendants(row).forEach(function (child) {
      var depth = level(child);
      if (closedBelow !== null && depth > closedBelow) {
        child.hidden = true;
        return;
      }
      closedBelow = null;
      child.hidden = false;
      if (isParent(child) && !isOpen(child)) {
        closedBelow = depth;
      }
    });
  }

  function collapse(row) {
    setToggle(row, false);
    descendants(row).forEach(function (child) {
      child.hidden = true;
    });
  }

  function expand(row) {
    if (!isParent(row) || isOpen(row) || row.getAttribute("aria-busy") === "true") {
      return Promise.resolve();
    }
    if (row.getAttribute("data-loaded") === "true") {
      setToggle(row, true);
      reveal(row);
      if (live) {
        live.refresh(); // its rows were not followed while it was closed
      }
      return Promise.resolve();
    }
    row.setAttribute("aria-busy", "true");
    return fetch(row.getAttribute("data-children-url"), {
      headers: { "X-Requested-With": "fetch" },
      credentials: "same-origin",
    })
      .then(function (response) {
        if (!response.ok) {
          throw new Error("the server answered " + response.status);
        }
        return response.text();
      })
      .then(function (html) {
        var holder = document.createElement("tbody");
        holder.innerHTML = html;
        var after = row;
        Array.prototype.slice.call(holder.children).forEach(function (child) {
          after.insertAdjacentElement("afterend", child);
          after = child;
        });
        clearError(row);
        row.setAttribute("data-loaded", "true");
        setToggle(row, true);
      })
      .catch(function (error) {
        showError(row, "Could not load the queues under this one: " + error.message + ".");
      })
      .then(function () {
        row.removeAttribute("aria-busy");
      });
  }

  function clearError(row) {
    var next = row.nextElementSibling;
    if (next && next.classList.contains("load-error")) {
      next.remove();
    }
  }

  function showError(row, message) {
    clearError(row);
    var tr = document.createElement("tr");
    tr.className = "load-error";
    var td = document.createElement("td");
    td.colSpan = row.children.length;
    td.setAttribute("role", "alert");
    td.textContent = message;
    tr.appendChild(td);
    // Deeper level than the row, so collapsing the row hides it too; not a treegrid row.
    tr.setAttribute("aria-level", String(level(row) + 1));
    row.insertAdjacentElement("afterend", tr);
  }

  function focusRow(tbody, row) {
    if (!row) {
      return;
    }
    tbody.querySelectorAll("tr[role='row'][tabindex='0']").forEach(function (other) {
      other.setAttribute("tabindex", "-1");
    });
    row.setAttribute("tabindex", "0");
    row.focus();
  }

  function parentRow(row) {
    var depth = level(row);
    for (var prev = row.previousElementSibling; prev; prev = prev.previousElementSibling) {
      if (prev.getAttribute("role") === "row" && level(prev) < depth) {
        return prev;
      }
    }
    return null;
  }

  function onKey(tbody, event) {
    var row = event.target.closest("tr[role='row']");
    if (!row || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    var rows = visibleRows(tbody);
    var index = rows.indexOf(row);
    switch (event.key) {
      case "ArrowDown":
        focusRow(tbody, rows[index + 1]);
        break;
      case "ArrowUp":
        focusRow(tbody, rows[index - 1]);
        break;
      case "Home":
        focusRow(tbody, rows[0]);
        break;
      case "End":
        focusRow(tbody, rows[rows.length - 1]);
        break;
      case "ArrowRight":
        if (isParent(row) && !isOpen(row)) {
          expand(row);
        } else if (isOpen(row)) {
          var next = visibleRows(tbody)[index + 1];
          if (next && next.getAttribute("role") === "row" && level(next) === level(row) + 1) {
            focusRow(tbody, next);
          }
        }
        break;
      case "ArrowLeft":
        if (isOpen(row)) {
          collapse(row);
        } else {
          focusRow(tbody, parentRow(row));
        }
        break;
      case "Enter":
        if (event.target === row) {
          row.querySelector(".queue-link").click();
        } else {
          return; // a link inside the row handles its own Enter
        }
        break;
      default:
        return;
    }
    event.preventDefault();
  }

  function initTree(table) {
    var tbody = table.tBodies[0];
    var first = tbody.querySelector("tr[role='row']");
    if (!first) {
      return;
    }
    // One tab stop for the whole tree; the links inside rows (expanders, queue pages) are
    // reached with the arrow keys and Enter, and stay clickable with a mouse. Without this
    // script they are ordinary links in the tab order.
    table.querySelectorAll("tbody a").forEach(function (link) {
      link.setAttribute("tabindex", "-1");
    });
    first.setAttribute("tabindex", "0");
    tbody.addEventListener("keydown", function (event) {
      onKey(tbody, event);
    });
    tbody.addEventListener("click", function (event) {
      var toggle = event.target.closest(".toggle");
      if (toggle && toggle.tagName === "A") {
        event.preventDefault();
        var row = toggle.closest("tr");
        (isOpen(row) ? Promise.resolve(collapse(row)) : expand(row)).then(function () {
          focusRow(tbody, row);
        });
      }
    });
    // Rows added by the fragment get the same treatment.
    new MutationObserver(function (records) {
      records.forEach(function (record) {
        record.addedNodes.forEach(function (node) {
          if (node.querySelectorAll) {
            node.querySelectorAll("a").forEach(function (link) {
              link.setAttribute("tabindex", "-1");
            });
          }
        });
      });
    }).observe(tbody, { childList: true });
  }

  /* Queues whose children the page shows (open and not inside a closed branch): the live
     document carries their children's rows. */
  function openQueues(table) {
    var pairs = [];
    table.querySelectorAll("tbody tr[aria-expanded='true']").forEach(function (row) {
      if (!row.hidden) {
        pairs.push(["open", row.getAttribute("data-path")]);
      }
    });
    var query = new URLSearchParams(window.location.search).get("q");
    if (query) {
      pairs.push(["q", query]);
    }
    return pairs;
  }

  /* Put the new cells of each row in place. The row header (expander, link, focus, tabindex)
     stays as it is: only the data cells and the row's over-max mark change. */
  function patchRows(table, html) {
    var holder = document.createElement("tbody");
    holder.innerHTML = html;
    var rows = {};
    table.tBodies[0].querySelectorAll("tr[data-path]").forEach(function (row) {
      rows[row.getAttribute("data-path")] = row;
    });
    holder.querySelectorAll("tr[data-path]").forEach(function (fresh) {
      var row = rows[fresh.getAttribute("data-path")];
      if (!row) {
        return;
      }
      row.classList.toggle("is-over", fresh.classList.contains("is-over"));
      var cells = row.querySelectorAll(":scope > td");
      var freshCells = fresh.querySelectorAll(":scope > td");
      if (cells.length !== freshCells.length) {
        return;
      }
      cells.forEach(function (cell, index) {
        if (cell.innerHTML !== freshCells[index].innerHTML) {
          cell.innerHTML = freshCells[index].innerHTML;
          cell.querySelectorAll("a").forEach(function (link) {
            link.setAttribute("tabindex", "-1");
          });
        }
      });
    });
  }

  var tree = document.querySelector("table[role='treegrid']");
  if (tree && live) {
    live.params(function () {
      return openQueues(tree);
    });
    live.onUpdate(function (data) {
      if (data.html && data.html.rows !== undefined) {
        patchRows(tree, data.html.rows);
      }
    });
  }
  document.querySelectorAll("table[role='treegrid']").forEach(initTree);
})();
