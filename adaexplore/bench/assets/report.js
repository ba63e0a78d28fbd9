// The report's behaviour: a node's details on click, sortable tables, and the location's #run/node-N.
// Everything it shows comes from the JSON in #report-data; text is set with textContent, never as markup.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var runs = {};
  (data.kind === "run" ? [data.run] : data.runs).forEach(function (run) {
    var nodes = {};
    run.nodes.forEach(function (node) { nodes[node.id] = node; });
    runs[run.id] = { run: run, nodes: nodes };
  });

  function make(tag, cls, text) {
    var element = document.createElement(tag);
    if (cls) { element.className = cls; }
    if (text !== undefined) { element.textContent = text; }
    return element;
  }
  function speedup(value) { return value === null || value === undefined ? "not measured" : value.toFixed(2) + "×"; }
  function share(value) { return value === null || value === undefined ? "—" : Math.round(value * 100) + "%"; }
  function word(text) { return String(text || "none").toLowerCase().replace(/[^a-z_]/g, ""); }

  function fillDiff(pre, node) {
    pre.textContent = "";
    if (node.parent === null) {
      pre.appendChild(make("span", "muted", "the root holds no kernel"));
    } else if (node.diff === null) {
      pre.appendChild(make("span", "muted", "its parent is the root, which holds no kernel: this code was written from scratch"));
    } else if (node.diff === "") {
      pre.appendChild(make("span", "muted", "the same code as its parent (node " + node.parent + ")"));
    } else {
      node.diff.split("\n").forEach(function (line) {
        var cls = "";
        if (line.indexOf("@@") === 0) { cls = "hunk"; }
        else if (line.indexOf("+++") === 0 || line.indexOf("---") === 0) { cls = "file"; }
        else if (line[0] === "+") { cls = "add"; }
        else if (line[0] === "-") { cls = "del"; }
        pre.appendChild(make("span", cls, line + "\n"));
      });
    }
  }

  function fact(list, term, value) {
    list.appendChild(make("dt", "", term));
    list.appendChild(make("dd", "", value));
  }

  function describe(panel, run, node) {
    var verdict = node.verdict;
    var title = node.parent === null
      ? "Node " + node.id + ": the root"
      : "Node " + node.id + ": " + node.kind + " step from node " + node.parent + ", step " + node.step;
    panel.querySelector(".node-title").textContent = title;
    var badge = panel.querySelector(".badge");
    badge.textContent = node.parent === null ? "root" : (node.status || "not evaluated");
    badge.className = "badge s-" + word(node.status);
    panel.querySelector(".message").textContent = node.parent === null
      ? "The search starts here; its children are the first kernels written (large steps)."
      : (verdict ? verdict.message : "no evaluation is stored for this node");
    var facts = panel.querySelector(".facts");
    facts.textContent = "";
    if (node.parent !== null) {
      fact(facts, "speedup vs eager", speedup(node.speedup));
      if (node.estimated_speedup !== null && node.estimated_speedup !== undefined) {
        fact(facts, "estimated speedup (not measured)", speedup(node.estimated_speedup));
      }
      if (node.sol_fraction !== null && node.sol_fraction !== undefined) {
        fact(facts, "share of the speed of light", (100 * node.sol_fraction).toFixed(0) + "%");
      }
      if (run.with_compile || node.compile_speedup !== null) { fact(facts, "vs torch.compile", speedup(node.compile_speedup)); }
      if (verdict) {
        fact(facts, "Triton share of GPU time", share(verdict.triton_share));
        fact(facts, "checked by", verdict.backends.join(", ") || "—");
        if (verdict.error) { fact(facts, "error", verdict.error.type + " in " + verdict.error.phase); }
      }
      fact(facts, "reward", node.reward === null ? "—" : node.reward.toFixed(3));
    }
    fact(facts, "visits", String(node.visits));
    fact(facts, "mean value", node.value === null ? "—" : node.value.toFixed(3));
    var flags = panel.querySelector(".flags");
    flags.textContent = "";
    var list = verdict ? verdict.flags : [];
    list.forEach(function (flag) {
      var item = make("li", word(flag.severity));
      item.appendChild(make("code", "", flag.code));
      item.appendChild(document.createTextNode(" (" + flag.severity + "): " + flag.message));
      flags.appendChild(item);
    });
    panel.querySelector(".flags-box").hidden = list.length === 0;
    fillDiff(panel.querySelector(".diff"), node);
    panel.querySelector(".code").textContent = node.code || "(no code)";
    panel.querySelector(".node-info").hidden = false;
    panel.querySelector(".hint").hidden = true;
  }

  function select(runId, nodeId, remember) {
    var entry = runs[runId];
    if (!entry || !entry.nodes[nodeId]) { return false; }
    var tree = document.querySelector('svg.tree[data-run-id="' + runId + '"]');
    var panel = document.querySelector('.details[data-run-id="' + runId + '"]');
    if (!tree || !panel) { return false; }
    var previous = tree.querySelector(".node.selected");
    if (previous) { previous.classList.remove("selected"); }
    var element = tree.querySelector('[data-node-id="' + nodeId + '"]');
    if (element) { element.classList.add("selected"); }
    describe(panel, entry.run, entry.nodes[nodeId]);
    if (remember) { history.replaceState(null, "", "#" + runId + "/node-" + nodeId); }
    return true;
  }

  function fromHash() {
    var parts = decodeURIComponent(location.hash.slice(1)).split("/");
    var runId = parts[0];
    if (!runs[runId]) { return; }
    var section = document.getElementById(runId);
    if (section && section.tagName === "DETAILS") { section.open = true; }
    if (parts[1] && parts[1].indexOf("node-") === 0) { select(runId, Number(parts[1].slice(5)), false); }
    if (section && section.tagName === "DETAILS") { section.scrollIntoView(); }
  }

  document.addEventListener("click", function (event) {
    var element = event.target.closest && event.target.closest("[data-node-id]");
    var tree = element && element.closest("svg.tree");
    if (tree) { select(tree.getAttribute("data-run-id"), Number(element.getAttribute("data-node-id")), true); }
  });
  document.addEventListener("keydown", function (event) {
    var element = event.target.closest && event.target.closest("[data-node-id]");
    var tree = element && element.closest("svg.tree");
    if (tree && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      select(tree.getAttribute("data-run-id"), Number(element.getAttribute("data-node-id")), true);
    }
  });
  window.addEventListener("hashchange", fromHash);

  function sortBy(table, index, header) {
    var numeric = header.getAttribute("data-type") === "num";
    var direction = header.getAttribute("aria-sort") === "ascending" ? -1 : 1;
    Array.prototype.forEach.call(header.parentNode.cells, function (cell) { cell.removeAttribute("aria-sort"); });
    header.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[index].getAttribute("data-value");
      var y = b.cells[index].getAttribute("data-value");
      if (!x || !y) { return x === y ? 0 : (x ? -1 : 1); } // empty cells last, either way
      var order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
      return order * direction;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (header, index) {
      header.setAttribute("tabindex", "0");
      header.addEventListener("click", function () { sortBy(table, index, header); });
      header.addEventListener("keydown", function (event) {
        if (event.key === "Enter") { sortBy(table, index, header); }
      });
    });
  });

  // Each tree starts with its best node shown (or its latest node), then the location may choose another.
  Object.keys(runs).forEach(function (runId) {
    var run = runs[runId].run;
    var last = run.nodes.length ? run.nodes[run.nodes.length - 1].id : null;
    var start = run.best_node_id !== null ? run.best_node_id : last;
    if (start !== null) { select(runId, start, false); }
  });
  fromHash();
})();
