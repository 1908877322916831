// Sleuth run viewer: plain DOM, no framework, no build step. State lives in the URL hash:
//   #                          the runs under the server's runs root
//   #run=ID[&type=T&correct=yes|no]   one run, its metrics and its questions
//   #run=ID&q=QUESTION_ID[&chunk=CHUNK_ID]   one question: answer vs gold, steps, chunks
//                              read (one opened), citations, A2RAG control, route
// The API key is the app's, from this tab's session storage (never the URL, which browsers
// keep in history and servers in logs), sent as a bearer token; a 401 asks for one.
"use strict";

const KEY_STORE = "sleuth.apiKey";
const RATIOS = new Set(["llm_acc", "contain", "em", "f1", "recall@2", "recall@5",
  "doc_recall@1", "read_recall", "abstained"]);
const LABELS = { n: "n", llm_acc: "LLM-Acc", contain: "Contain", em: "EM", f1: "F1",
  "recall@2": "R@2", "recall@5": "R@5", "doc_recall@1": "Doc R@1", read_recall: "Read R",
  steps: "steps", llm_calls: "calls", llm_tokens: "LLM tok", latency: "lat s",
  latency_p95: "p95 s", abstained: "abstain", errors: "errors" };
const chunkCache = new Map();

function api(path) {
  const headers = { Accept: "application/json" };
  const key = sessionStorage.getItem(KEY_STORE);
  if (key) headers.Authorization = "Bearer " + key;
  return fetch(path, { headers }).then(async (resp) => {
    if (resp.status === 401) askForKey();
    if (!resp.ok) {
      let detail = resp.statusText;
      try { detail = (await resp.json()).detail || detail; } catch (e) { /* not JSON */ }
      throw new Error(`${resp.status} ${detail}`);
    }
    return resp.json();
  });
}

// el("div", {class: "x", onclick: f}, child, "text", [more children])
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  const add = (child) => {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) child.forEach(add);
    else node.append(child instanceof Node ? child : String(child));
  };
  children.forEach(add);
  return node;
}

function fmt(key, value) {
  if (value === null || value === undefined) return "";
  if (typeof value !== "number") return String(value);
  if (RATIOS.has(key)) return (100 * value).toFixed(1) + "%";
  if (key === "n" || key === "errors") return value.toFixed(0);
  if (key.startsWith("latency")) return value.toFixed(2);
  if (key.endsWith("tokens")) return value.toFixed(0);
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function hashParams() { return new URLSearchParams(location.hash.replace(/^#/, "")); }
function link(params) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) p.set(k, v);
  return "#" + p.toString();
}
function status(text, error) {
  const node = document.getElementById("status");
  node.textContent = text || "";
  node.hidden = !text;
  node.className = error ? "status error" : "status";
}
function show(id, content) {
  for (const name of ["runs", "run", "question"]) {
    const section = document.getElementById(name);
    section.hidden = name !== id;
    if (name === id) section.replaceChildren(...content.filter((c) => c != null && c !== false));
  }
}
function crumbs(parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren();
  parts.forEach(([label, href], i) => {
    if (i) nav.append(el("span", { class: "sep" }, "›"));
    nav.append(href ? el("a", { href }, label) : el("span", {}, label));
  });
}
function badge(text, kind) { return el("span", { class: "badge " + (kind || "") }, text); }
function yesNo(value, yes, no) {
  if (value === null || value === undefined) return badge("?");
  return value ? badge(yes || "yes", "ok") : badge(no || "no", "bad");
}

// ---- chunks: a button per id; clicking it fetches /v1/chunks/{id} and shows the text below
function chunkLink(id, target) {
  const button = el("button", { class: "chunk-link", type: "button", "data-chunk": id }, id);
  button.addEventListener("click", () => toggleChunk(id, button, target));
  return button;
}
function toggleChunk(id, button, target) {
  const holder = target || button.parentElement;
  const existing = holder.querySelector(`.chunk-text[data-for="${CSS.escape(id)}"]`);
  if (existing) { existing.remove(); return; }
  const box = el("div", { class: "chunk-text", "data-for": id }, "Loading " + id + "…");
  holder.append(box);
  const cached = chunkCache.get(id);
  (cached ? Promise.resolve(cached) : api("/v1/chunks/" + encodeURIComponent(id)))
    .then((chunk) => {
      chunkCache.set(id, chunk);
      box.replaceChildren(
        el("div", { class: "title" }, `${chunk.title || chunk.doc_id} — ${chunk.chunk_id}`),
        el("div", {}, chunk.text));
    })
    .catch((err) => box.replaceChildren(el("span", { class: "status error" }, err.message)));
}

// ---- the run list
function metricTable(rows, first, keys) {
  const head = el("tr", {}, el("th", {}, first),
    keys.map((k) => el("th", { class: "num" }, LABELS[k] || k)));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, rows));
}
function metricCells(metrics, keys) {
  return keys.map((k) => el("td", { class: "num" }, fmt(k, metrics[k])));
}
function presentKeys(metricsList) {
  return Object.keys(LABELS).filter((k) => metricsList.some((m) => m && k in m));
}

async function renderRuns() {
  crumbs([["runs"]]);
  status("Loading runs…");
  const data = await api("/v1/runs");
  const ok = data.runs.filter((r) => !r.error);
  const keys = presentKeys(ok.map((r) => r.metrics));
  const rows = [];
  for (const run of data.runs) {
    if (run.error) {
      rows.push(el("tr", {}, el("td", {}, run.id), el("td", { colspan: keys.length + 1,
        class: "status error" }, run.error)));
      continue;
    }
    const href = link({ run: run.id });
    rows.push(el("tr", { class: "click", onclick: () => { location.hash = href; } },
      el("td", {}, el("a", { href }, run.id), " ", badge(run.agent || "?"),
        run.model ? el("span", { class: "meta" }, " " + run.model) : null),
      metricCells(run.metrics, keys)));
    const types = Object.entries(run.by_type || {});
    if (types.length > 1) {
      for (const [type, metrics] of types) {
        rows.push(el("tr", { class: "sub" }, el("td", {}, "type: " + type),
          metricCells(metrics, keys)));
      }
    }
  }
  show("runs", [
    el("h2", {}, `${data.runs.length} run(s) under ${data.root}`),
    data.runs.length ? metricTable(rows, "run", keys)
      : el("p", { class: "meta" }, "No predictions.jsonl found. Write one with "
        + "`sleuth eval run --output DIR`."),
  ]);
  status("");
}

// ---- one run
async function renderRun(runId, params) {
  crumbs([["runs", "#"], [runId]]);
  status("Loading run " + runId + "…");
  const run = await api("/v1/runs/" + runId.split("/").map(encodeURIComponent).join("/"));
  const keys = presentKeys([run.overall, ...Object.values(run.by_type)]);
  const overall = metricTable([
    el("tr", {}, el("td", {}, "overall"), metricCells(run.overall, keys)),
    ...Object.entries(run.by_type).map(([t, m]) =>
      el("tr", { class: "sub" }, el("td", {}, "type: " + t), metricCells(m, keys))),
  ], "", keys);

  const types = [...new Set(run.questions.map((q) => q.question_type))].sort();
  const state = { type: params.get("type") || "", correct: params.get("correct") || "",
    text: "" };
  const tbody = el("tbody");
  const counter = el("span", { class: "meta" });
  const draw = () => {
    const shown = run.questions.filter((q) =>
      (!state.type || q.question_type === state.type)
      && (!state.correct || (state.correct === "yes") === q.correct)
      && (!state.text || (q.question + " " + q.question_id).toLowerCase()
        .includes(state.text.toLowerCase())));
    counter.textContent = `${shown.length} of ${run.questions.length} questions`;
    tbody.replaceChildren(...shown.map((q) => {
      const href = link({ run: runId, q: q.question_id });
      return el("tr", { class: "click", "data-question": q.question_id,
        onclick: () => { location.hash = href; } },
        el("td", {}, el("a", { href }, q.question_id)),
        el("td", {}, q.question_type),
        el("td", {}, q.question),
        el("td", {}, yesNo(q.correct, "correct", "wrong"),
          q.error ? badge("error", "bad") : null,
          q.abstained ? badge("abstained", "warn") : null,
          q.outcome && !(q.abstained && q.outcome === "abstained") ? badge(q.outcome) : null),
        el("td", { class: "num" }, fmt("f1", q.f1)),
        el("td", { class: "num" }, fmt("steps", q.steps)),
        el("td", { class: "num" }, fmt("latency", q.latency)));
    }));
  };
  const select = (name, options) => el("select", {
    "data-filter": name,
    onchange: (e) => { state[name] = e.target.value; draw(); },
  }, options.map(([value, label]) =>
    el("option", { value, selected: state[name] === value }, label)));
  const filters = el("div", { class: "filters" },
    el("label", {}, "type ", select("type", [["", "all"], ...types.map((t) => [t, t])])),
    el("label", {}, "answer ", select("correct", [["", "all"], ["yes", "correct"],
      ["no", "wrong"]])),
    el("input", { type: "search", placeholder: "search questions",
      oninput: (e) => { state.text = e.target.value; draw(); } }),
    counter);
  const head = el("tr", {}, ["id", "type", "question", "result"].map((h) => el("th", {}, h)),
    ["F1", "steps", "lat s"].map((h) => el("th", { class: "num" }, h)));
  draw();
  show("run", [
    el("h2", {}, run.id, " ", badge(run.agent || "?"),
      run.model ? el("span", { class: "meta" }, " " + run.model) : null),
    el("div", { class: "meta" }, run.path),
    el("h3", {}, "Metrics"), overall,
    run.control ? controlSummary(run.control) : null,
    el("h3", {}, "Questions"), filters,
    el("table", { id: "questions" }, el("thead", {}, head), tbody),
  ]);
  status("");
}

function controlSummary(control) {
  const shares = (obj) => Object.entries(obj || {})
    .map(([k, v]) => `${k} ${(100 * v).toFixed(0)}%`).join(", ");
  return el("div", { class: "card" }, el("strong", {}, "A2RAG control: "),
    "outcome: " + shares(control.outcome), "; last stage: " + (shares(control.stage) || "–"),
    `; ${Number(control.attempts_mean).toFixed(2)} attempts per question`);
}

// ---- one question
// Tool outputs list hits in a few shapes (see sleuth/agent/context.py): "[2] chunk_id: ID |
// score: S | title: T" then "- snippet" lines; "=== chunk ID (document D; ...) ===" then the
// text; "[ID] Title" then the text (a2rag, ircot, memory); "[turn1search2] Title: ..." refs.
const HEADS = [
  /^\[\d+\] chunk_id: (\S+)(?: \| score: [^|]*)?(?: \| title: (.*))?$/,
  /^=== chunk ([^\s:]+):?\s*(.*?)(?:\s*===)?$/,
  /^\[([^\]\s]+)\]\s*(.*)$/,
];
function snippets(output) {
  const hits = [];
  for (const line of String(output || "").split("\n")) {
    const m = HEADS.map((re) => line.match(re)).find(Boolean);
    if (m) hits.push({ id: m[1], title: m[2] || "", text: [] });
    else if (hits.length && line.trim()) {
      hits[hits.length - 1].text.push(line.trim().replace(/^- /, ""));
    }
  }
  return hits;
}
function isChunkId(id) { return !/^(\d+|turn\d+search\d+)$/.test(id); }

function stepCard(step) {
  const hits = snippets(step.tool_output);
  const list = el("ul", { class: "snippets" }, hits.map((h) => {
    const text = h.text.join(" ");
    const li = el("li", {}, isChunkId(h.id) ? chunkLink(h.id) : el("code", {}, h.id), " ", el("strong", {}, h.title), " ",
      el("span", { class: "meta" }, text.length > 300 ? text.slice(0, 300) + "…" : text));
    return li;
  }));
  const output = String(step.tool_output ?? "");
  const check = step.kind === "check";  // an answer check, not a tool call
  return el("div", { class: "card step" + (check ? " check" : "") + (step.error ? " failed" : ""),
    "data-step": step.step },
    el("div", { class: "step-head" },
      el("span", { class: "meta" }, (check ? "check, step " : "step ") + step.step),
      el("span", { class: "tool" }, step.tool_name),
      step.retrieved_tokens != null
        ? el("span", { class: "meta" }, step.retrieved_tokens + " tokens retrieved") : null,
      step.seconds != null ? el("span", { class: "meta" }, fmt("latency", step.seconds) + " s")
        : null,
      step.error ? badge("error: " + step.error, "bad") : null),
    step.reasoning ? el("div", { class: "reasoning" }, step.reasoning) : null,
    el("details", {}, el("summary", {}, "arguments"),
      el("pre", { class: "args" }, JSON.stringify(step.tool_input, null, 2))),
    hits.length ? el("div", {}, el("div", { class: "meta" }, `${hits.length} snippet(s)`), list)
      : null,
    el("details", { open: output.length < 600 }, el("summary", {},
      `output (${output.length} characters)`), el("pre", { class: "output" }, output)));
}

function kv(obj) {
  return el("dl", { class: "kv" }, Object.entries(obj || {}).map(([k, v]) => [
    el("dt", {}, k),
    el("dd", {}, typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)),
  ]));
}

function controlBlock(control) {
  const gate = control.gate || null;
  const attempts = control.attempts || [];
  const rows = attempts.map((a, i) => {
    const check = a.check || {};
    return el("tr", {},
      el("td", { class: "num" }, i + 1),
      el("td", {}, a.query, a.rewrite ? el("div", { class: "meta" }, "→ rewrite: " + a.rewrite)
        : null),
      el("td", {}, a.stage || ""),
      el("td", {}, el("div", { class: "ids" }, (a.evidence || []).map((id) => chunkLink(id)))),
      el("td", { class: "answer" }, a.candidate || ""),
      el("td", {}, ["relevance", "grounding", "adequacy"].map((k) =>
        k in check ? yesNo(check[k], k, k) : null),
      check.failure ? el("div", {}, "failure: " + check.failure) : null,
      check.reason ? el("div", { class: "meta" }, check.reason) : null));
  });
  return el("div", { class: "card", id: "control" },
    el("h3", {}, "A2RAG control ", badge(control.outcome || "none",
      control.outcome === "verified" ? "ok" : "warn")),
    gate ? el("div", {}, el("strong", {}, "gate: "), yesNo(gate.passed, "passed", "refused"),
      ` score ${gate.score} / threshold ${gate.threshold}`,
      gate.nearest_document ? `, nearest document ${gate.nearest_document}` : "") : null,
    attempts.length ? el("table", {}, el("thead", {}, el("tr", {},
      ["#", "query", "stage", "evidence", "candidate", "check"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows)) : null,
    "proposed" in control ? el("div", { class: "meta" }, "proposed: " + control.proposed)
      : null);
}

async function renderQuestion(runId, questionId, openChunk) {
  const runHref = link({ run: runId });
  crumbs([["runs", "#"], [runId, runHref], [questionId]]);
  status("Loading question " + questionId + "…");
  const path = "/v1/runs/" + runId.split("/").map(encodeURIComponent).join("/")
    + "/questions/" + encodeURIComponent(questionId);
  const { record, scores, summary } = await api(path);
  const golds = summary.gold_answers || [];
  const trajectory = record.trajectory || [];
  const chunksBox = el("div", { id: "chunks-read" });
  chunksBox.append(el("div", { class: "ids" },
    (record.chunks_read_ids || []).map((id) => chunkLink(id, chunksBox))));
  const citations = record.citations || [];
  const parts = [
    el("h2", { id: "question-text" }, record.question),
    el("div", {}, badge(summary.question_type), yesNo(summary.correct, "correct", "wrong"),
      record.error ? badge("error", "bad") : null,
      record.abstained ? badge("abstained", "warn") : null,
      el("span", { class: "meta" }, ` EM ${fmt("em", scores.em)} · F1 ${fmt("f1", scores.f1)}`
        + ` · ${fmt("latency", scores.latency)} s · ${record.llm_calls ?? "?"} LLM calls · `
        + `${(record.prompt_tokens || 0) + (record.completion_tokens || 0)} LLM tokens`
        + (record.model ? " · " + record.model : ""))),
    el("div", { class: "compare" },
      el("div", { class: "card" }, el("h3", {}, "Answer"),
        el("div", { class: "answer", id: "answer" }, record.answer || "(empty)")),
      el("div", { class: "card" }, el("h3", {}, "Gold"),
        el("div", { class: "answer", id: "gold" }, golds.join(" / ") || "(none)"))),
    record.error ? el("div", { class: "card status error" }, record.error) : null,
    record.route ? el("div", { class: "card", id: "route" }, el("h3", {}, "Route"),
      kv(record.route)) : null,
    record.control ? controlBlock(record.control) : null,
    el("h3", {}, `Steps (${trajectory.length})`),
    trajectory.length ? el("div", { id: "steps" }, trajectory.map(stepCard))
      : el("p", { class: "meta" }, "No steps."),
    el("h3", {}, `Chunks read (${(record.chunks_read_ids || []).length})`),
    el("p", { class: "meta" }, "Click an id to show its text."), chunksBox,
    el("h3", {}, `Citations (${citations.length})`),
    citations.length ? el("table", { id: "citations" }, el("thead", {}, el("tr", {},
      ["chunk", "title", "score", "stated", "where"].map((h) => el("th", {}, h)))),
    el("tbody", {}, citations.map((c) => {
      const cell = el("td", {}, chunkLink(c.chunk_id));
      return el("tr", {}, cell, el("td", {}, c.title || c.doc_id || ""),
        el("td", { class: "num", title: "search score, relative to its search's best hit" },
          c.score != null ? Number(c.score).toFixed(2) : ""),
        el("td", { class: "num", title: "relevance the model stated" },
          c.relevance != null ? Number(c.relevance).toFixed(2) : ""),
        el("td", {}, c.where || c.ref || ""));
    }))) : el("p", { class: "meta" }, "No citations."),
    record.memory_state ? el("details", {}, el("summary", {}, "memory state"),
      el("pre", {}, typeof record.memory_state === "string" ? record.memory_state
        : JSON.stringify(record.memory_state, null, 2))) : null,
    el("details", {}, el("summary", {}, "full record (JSON)"),
      el("pre", {}, JSON.stringify(record, null, 2))),
  ];
  show("question", parts);
  status("");
  if (openChunk) {  // #...&chunk=ID opens that chunk's text under "Chunks read"
    const button = chunksBox.querySelector(`[data-chunk="${CSS.escape(openChunk)}"]`);
    if (button) button.click();
  }
}

async function route() {
  const params = hashParams();
  const run = params.get("run");
  const q = params.get("q");
  try {
    if (run && q) await renderQuestion(run, q, params.get("chunk"));
    else if (run) await renderRun(run, params);
    else await renderRuns();
    document.body.dataset.ready = "1";
  } catch (err) {
    status(err.message, true);
    document.body.dataset.ready = "error";
  }
}

function askForKey() {
  const form = document.getElementById("key-form");
  form.hidden = false;
  document.getElementById("key-input").focus();
}
document.getElementById("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const key = document.getElementById("key-input").value.trim();
  if (key) sessionStorage.setItem(KEY_STORE, key);
  document.getElementById("key-form").hidden = true;
  route();
});
window.addEventListener("hashchange", route);
route();
