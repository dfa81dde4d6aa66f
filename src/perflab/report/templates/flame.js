/* perflab's flame graphs: built from the JSON beside each .flame box, no network, no library.
   Click a frame to zoom into it (and see its callers and callees), search with a regular
   expression (the matching frames and their share of the samples), hover for the figures. */
(function () {
  "use strict";
  if (window.perflabFlames) return;  // the script comes with every flame graph: run it once
  window.perflabFlames = true;
  var ROW = 18;
  function pct(x) { return x === 0 ? "0 %" : (100 * x).toFixed(x < 0.001 ? 3 : 1) + " %"; }
  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return h;
  }
  function warm(name) {
    var h = hue(name);
    return "hsl(" + (10 + h % 40) + ",80%," + (62 + (h >> 8) % 14) + "%)";
  }
  function prepare(node, parent, depth, x) {
    node.parent = parent; node.depth = depth; node.x = x;
    var max = depth, cx = x;
    (node.c || []).forEach(function (c) { max = Math.max(max, prepare(c, node, depth + 1, cx)); cx += c.v; });
    return max;
  }
  function each(node, fn) { fn(node); (node.c || []).forEach(function (c) { each(c, fn); }); }
  function path(node) { var p = []; for (var n = node; n; n = n.parent) p.unshift(n); return p; }

  function Flame(box) {
    var data = JSON.parse(box.querySelector("script.flame-data").textContent);
    var root = data.root, diff = !!data.diff, total = root.v || 1, self = this;
    var depth = prepare(root, null, 0, 0);
    var graph = box.querySelector(".flame-graph"), tip = box.querySelector(".flame-tip");
    var info = box.querySelector(".flame-info"), found = box.querySelector(".flame-found");
    var search = box.querySelector(".flame-search");
    graph.style.height = (depth + 1) * ROW + "px";
    var maxd = 0;
    if (diff) each(root, function (n) { if (n.a !== undefined) maxd = Math.max(maxd, Math.abs(n.v / total - n.a)); });
    var frames = [];
    each(root, function (n) {
      var el = document.createElement("div");
      el.className = "flame-frame";
      el.style.bottom = n.depth * ROW + "px";
      var marked = diff && n.t && n.t.marked;
      if (marked) el.className += " flame-marked";
      if (diff && n.a === 0) el.className += " flame-new";
      el.textContent = (marked ? "* " : "") + n.n;
      if (diff && n.a !== undefined) {
        var d = n.v / total - n.a, k = maxd ? Math.min(1, Math.abs(d) / maxd) : 0;
        el.style.background = d >= 0 ? "hsl(30,90%," + (95 - 40 * k) + "%)" : "hsl(210,70%," + (95 - 40 * k) + "%)";
      } else {
        el.style.background = diff ? "#eeeeee" : warm(n.n);
      }
      el.addEventListener("click", function (ev) { ev.stopPropagation(); self.zoom(n); });
      el.addEventListener("mousemove", function (ev) { self.tip(n, ev); });
      el.addEventListener("mouseleave", function () { tip.hidden = true; });
      n.el = el;
      frames.push(n);
      graph.appendChild(el);
    });

    this.describe = function (n) {
      var lines = [n.n, Math.round(n.v).toLocaleString("en") + " " + (data.unit || "samples") + ", " +
                   pct(n.v / total) + " of the recording" + (data.recordings > 1 ? "s" : "") +
                   " (self " + pct(n.s / total) + ")"];
      if (n.ci) lines.push((100 * data.level).toFixed(0) + " % interval over " + data.recordings +
                           " recordings: " + pct(n.ci[0]) + " to " + pct(n.ci[1]));
      if (diff && n.a !== undefined) {
        lines.push(data.a_label + " " + pct(n.a) + " -> " + data.b_label + " " + pct(n.v / total) +
                   " of the samples (inclusive)" + (n.a === 0 ? "; only in " + data.b_label : ""));
        lines.push(n.t ? n.t.text : "its function was not tested (" + data.untested + ")");
      }
      return lines;
    };
    this.tip = function (n, ev) {
      tip.textContent = "";
      this.describe(n).forEach(function (l) { var d = document.createElement("div"); d.textContent = l; tip.appendChild(d); });
      var r = box.getBoundingClientRect();
      tip.style.left = Math.min(ev.clientX - r.left + 12, r.width - 320) + "px";
      tip.style.top = (ev.clientY - r.top + 14) + "px";
      tip.hidden = false;
    };
    this.zoom = function (z) {
      self.zoomed = z;
      frames.forEach(function (n) {
        var inside = n.x >= z.x && n.x + n.v <= z.x + z.v + 1e-9, above = n.depth >= z.depth;
        var w = inside && above ? n.v / z.v : (z.x >= n.x && z.x + z.v <= n.x + n.v + 1e-9 ? 1 : 0);
        var left = inside && above ? (n.x - z.x) / z.v : 0;
        n.el.style.display = w * graph.clientWidth < 1 ? "none" : "";
        n.el.style.left = 100 * left + "%";
        n.el.style.width = 100 * w + "%";
        n.el.classList.toggle("flame-above", !(inside && above) && w > 0);
      });
      info.textContent = "";
      var h = document.createElement("div");
      h.className = "flame-selected";
      h.textContent = "selected: " + self.describe(z).join("; ");
      info.appendChild(h);
      var callers = document.createElement("div");
      callers.textContent = "callers: " + (path(z).slice(1, -1).map(function (p) { return p.n; }).join(" > ") || "none");
      info.appendChild(callers);
      var list = document.createElement("ul");
      (z.c || []).slice(0, 12).forEach(function (c) {
        var li = document.createElement("li");
        li.textContent = pct(c.v / total) + "  " + c.n;
        list.appendChild(li);
      });
      var callees = document.createElement("div");
      callees.textContent = (z.c || []).length ? "callees (inclusive share of all samples):" : "callees: none";
      info.appendChild(callees);
      info.appendChild(list);
    };
    this.search = function (text) {
      var re = null, share = 0, count = 0;
      if (text) {
        try { re = new RegExp(text, "i"); } catch (e) { re = { test: function (s) { return s.toLowerCase().indexOf(text.toLowerCase()) >= 0; } }; }
      }
      // a match inside a matching frame is counted once: the share is of distinct samples
      (function walk(n, under) {
        var hit = !!re && n !== root && re.test(n.n);
        n.el.classList.toggle("flame-hit", hit);
        if (hit) count++;
        if (hit && !under) share += n.v;
        (n.c || []).forEach(function (c) { walk(c, under || hit); });
      })(root, false);
      found.textContent = re ? count + " frames match, " + pct(share / total) + " of the samples" : "";
      return { frames: count, share: share / total };
    };
    search.addEventListener("input", function () { self.search(search.value); });
    box.querySelector(".flame-reset").addEventListener("click", function () { self.zoom(root); });
    this.root = root;
    this.zoom(root);
    box.flame = this;
  }
  function start() { document.querySelectorAll(".flame").forEach(function (b) { if (!b.flame) new Flame(b); }); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
