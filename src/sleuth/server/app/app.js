/* Sleuth app: ask your documents, watch the agent work, open what it cites.
 *
 * Plain JavaScript against the HTTP API (no build step, no CDN): /v1/ask/stream for live
 * steps and answer tokens, /v1/sessions for conversations, /v1/documents for the library,
 * /v1/passage for a cited passage. The API key, when the server wants one, is kept in this
 * tab's session storage and sent as a Bearer token. Views are hash routes:
 *   #/                       ask (a new conversation)
 *   #/session/<id>           a saved conversation
 *   #/documents              the documents
 *   #/passage?doc=&chunk=&lines=a-b&page=n&support=   one passage (the links chat answers
 *                            carry); support: the claim it backs, whose sentences are marked
 */
"use strict";

const KEY_STORE = "sleuth.apiKey";
const AGENT_STORE = "sleuth.agent";
const OUTPUT_PREVIEW = 320;   // characters of a tool's output shown before "more"
const SUPPORT_MAX = 2000;     // characters of the claim sent with a cited passage (the API's limit)
const CLAIM_MIN_WORDS = 4;    // a sentence shorter than this is no claim: send the whole answer
const CITE_MARK = /\[[^\[\]\n]{1,300}\]/g;        // a citation marker, ids or not
// Where an answer's sentence ends: not after "Mr." or an initial.
const SENTENCE_END = /(?<!\b(?:Mrs?|Ms|Dr|St|Jr|Sr|Prof|vs|etc|e\.g|i\.e|[A-Z]))[.!?]+["'”’)]*(?=\s)|\n/g;

const state = {
  key: sessionStorage.getItem(KEY_STORE) || "",
  session: null,          // the conversation shown: its id once it has one
  running: null,          // AbortController of the question being answered
  limits: {},             // the server's limits (from /v1/status)
  documents: [],
};
// Timings of the last answer, read by the browser test (performance.now() milliseconds).
window.sleuthTimings = {};

const $ = (selector) => document.querySelector(selector);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// ---------------------------------------------------------------- talking to the server

class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

function authHeaders(extra = {}) {
  return state.key ? { ...extra, Authorization: `Bearer ${state.key}` } : extra;
}

async function api(path, { method = "GET", json, body, signal, raw = false } = {}) {
  const headers = authHeaders(json === undefined ? {} : { "Content-Type": "application/json" });
  let response;
  try {
    response = await fetch(path, { method, headers, signal,
      body: json === undefined ? body : JSON.stringify(json) });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError("Cannot reach the Sleuth server. Is `sleuth serve http` still running?", 0);
  }
  if (!response.ok) throw await failure(response);
  return raw ? response : response.json();
}

async function failure(response) {
  let detail = "";
  try {
    const body = await response.json();
    detail = body.detail || (body.error && body.error.message) || "";
  } catch (_) { /* not JSON: say what the status means */ }
  if (typeof detail !== "string") detail = JSON.stringify(detail);
  const status = response.status;
  if (status === 401) {
    askForKey(state.key ? "The server refused this API key. Enter a valid one."
      : "This server needs an API key.");
    return new ApiError(state.key ? "The API key was refused." : "An API key is needed.", 401);
  }
  if (status === 413) return new ApiError(detail || "That is larger than the server accepts.", 413);
  if (status === 503) return new ApiError("The server is busy; try again in a moment.", 503);
  return new ApiError(detail || `The server answered ${status} ${response.statusText}.`, status);
}

function notify(message, kind = "error") {
  $("#notice-text").textContent = message;
  $("#notice").className = kind === "error" ? "notice" : "notice info";
  $("#notice").hidden = false;
}

function clearNotice() { $("#notice").hidden = true; }

// Server-sent events from a fetch response (EventSource cannot POST a body).
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { name, data: JSON.parse(data.join("\n")) };
    }
  }
}

// ---------------------------------------------------------------- API key

function askForKey(reason) {
  $("#key-reason").textContent = reason ||
    "The key is kept in this browser tab only (session storage).";
  $("#key-input").value = state.key;
  const dialog = $("#key-dialog");
  if (!dialog.open) dialog.showModal();
  $("#key-input").focus();
}

function setKey(key) {
  state.key = key.trim();
  if (state.key) sessionStorage.setItem(KEY_STORE, state.key);
  else sessionStorage.removeItem(KEY_STORE);
  clearNotice();
  start();
}

// ---------------------------------------------------------------- links to passages

function passageHash(citation) {
  const params = new URLSearchParams();
  if (citation.doc_id) params.set("doc", citation.doc_id);
  if (citation.chunk_id) params.set("chunk", citation.chunk_id);
  if (Array.isArray(citation.lines)) params.set("lines", `${citation.lines[0]}-${citation.lines[1]}`);
  if (citation.page) params.set("page", String(citation.page));
  if (citation.tool) params.set("tool", citation.tool);
  if (citation.support) params.set("support", citation.support);
  return `#/passage?${params}`;
}

function parsePassage(query) {
  const params = new URLSearchParams(query);
  const out = { doc_id: params.get("doc"), chunk_id: params.get("chunk"),
    page: params.get("page"), tool: params.get("tool"), support: params.get("support") };
  const lines = /^(\d+)-(\d+)$/.exec(params.get("lines") || "");
  if (lines) out.lines = [Number(lines[1]), Number(lines[2])];
  return out;
}

// ---------------------------------------------------------------- asking

function newSessionId() {
  const random = Math.random().toString(36).slice(2, 8);
  return `web-${Date.now().toString(36)}-${random}`;
}

function renderQuestion(text) {
  return el("div", { class: "question" }, text);
}

function shortJson(value) {
  const text = JSON.stringify(value);
  return text && text.length > 200 ? `${text.slice(0, 200)}…` : text || "";
}

// An answer check's step: what the check did to the answer, not a tool call.
function renderCheck(step) {
  return el("li", { class: "step check" },
    el("span", { class: "kind" }, "check"), " ", el("span", { class: "tool" }, step.tool_name),
    step.reasoning ? el("span", { class: "muted" }, ` — ${step.reasoning}`) : null);
}

function renderStep(step) {
  if (step.kind === "check") return renderCheck(step);
  const output = String(step.tool_output || "");
  const preview = output.length > OUTPUT_PREVIEW ? `${output.slice(0, OUTPUT_PREVIEW)}…` : output;
  const item = el("li", { class: step.error ? "step failed" : "step" },
    el("span", { class: "tool" }, step.tool_name),
    " ", el("span", { class: "args" }, shortJson(step.tool_input)),
    step.seconds !== undefined ? el("span", { class: "muted" }, ` · ${step.seconds.toFixed(2)} s`) : null,
    step.reasoning ? el("div", { class: "muted" }, step.reasoning) : null,
    step.error ? el("div", { class: "event" }, step.error) : null);
  if (output) {
    if (output.length > OUTPUT_PREVIEW) {
      item.append(el("details", {}, el("summary", {}, preview.split("\n")[0].slice(0, 120) || "result"),
        el("pre", {}, output)));
    } else {
      item.append(el("pre", {}, output));
    }
  }
  return item;
}

function renderContextEvent(event) {
  const verb = event.action === "summarize" ? "context summarised" : "context nearly full";
  const where = event.used !== undefined ? ` (${event.used} of ${event.budget} tokens, ${event.percent} %)` : "";
  return el("li", {}, el("span", { class: "event" }, verb + where));
}

// Answer text with its citation markers ([chunk-id], [ref], [a, b]) as links to passages.
function renderAnswer(node, text, citations) {
  node.textContent = "";
  const byId = new Map();
  for (const c of citations || []) {
    if (c.ref) byId.set(c.ref, c);
    byId.set(c.chunk_id, c);
  }
  let last = 0;
  for (const match of text.matchAll(/\[([^\[\]\n]{1,300})\]/g)) {
    const ids = match[1].split(/[,;]\s*/).map((s) => s.trim());
    const found = ids.map((id) => byId.get(id));
    if (!found.every(Boolean)) continue;
    node.append(text.slice(last, match.index));
    const support = claimOf(text, match.index, match.index + match[0].length);
    found.forEach((citation, i) => node.append(citeLink({ ...citation, support }, ids[i])));
    last = match.index + match[0].length;
  }
  node.append(text.slice(last));
}

// What a citation at text[at, end) backs: the answer's sentence holding it (the one before, when
// the marker follows a sentence's end), without citation markers; the whole answer when that
// sentence says too little. The passage view marks the cited chunk's sentences that support it.
function claimOf(text, at, end) {
  const bare = (part) => part.replace(CITE_MARK, " ").replace(/\s+/g, " ")
    .replace(/ ([.,;:!?])/g, "$1").trim();
  const before = text.slice(0, at);
  const starts = [0, ...Array.from(before.matchAll(SENTENCE_END), (m) => m.index + m[0].length)];
  let start = starts.pop();
  let finish = null;
  while (starts.length && !bare(before.slice(start))) {  // the marker follows a sentence's end
    start = starts.pop();
    finish = at;
  }
  if (finish === null) {
    const after = text.slice(end);
    const stop = Array.from(after.matchAll(SENTENCE_END), (m) => m.index + m[0].length)[0];
    finish = stop === undefined ? text.length : end + stop;
  }
  let claim = bare(text.slice(start, finish));
  if (claim.split(" ").length < CLAIM_MIN_WORDS) claim = bare(text);
  return claim.slice(0, SUPPORT_MAX) || null;
}

function citeLink(citation, label) {
  return el("a", { class: "cite", href: passageHash(citation),
    title: `${citation.title || citation.doc_id}${citation.where ? `, ${citation.where}` : ""}`,
    onclick: (event) => { event.preventDefault(); openPassage(citation); } }, `[${label}]`);
}

function renderSources(citations) {
  if (!citations || !citations.length) return null;
  return el("ol", { class: "sources", "aria-label": "Sources" }, citations.map((c) =>
    el("li", {}, el("a", { href: passageHash(c), class: "source",
      onclick: (event) => { event.preventDefault(); openPassage(c); } }, c.title || c.doc_id),
    c.where ? el("span", { class: "where" }, ` · ${c.where}`) : null,
    c.tool ? el("span", { class: "by" }, ` · found by ${c.tool}`) : null,
    typeof c.score === "number"
      ? el("span", { class: "score", title: "the search score it was found with, relative to that search's best hit (1.00)" },
        ` · score ${c.score.toFixed(2)}`) : null)));
}

// While the model reads: "reading 5 passages (about 40 s here)", with the seconds so far.
function showReading(node, reading) {
  stopReading(node);
  const started = performance.now();
  const tick = () => {
    node.textContent = `${reading.text} · ${Math.round((performance.now() - started) / 1000)} s`;
  };
  tick();
  node.hidden = false;
  node.timer = setInterval(tick, 1000);
}

function stopReading(node) {
  if (node.timer) clearInterval(node.timer);
  node.timer = null;
  node.hidden = true;
}

function renderTurn(turn) {
  const answer = el("div", { class: "answer" });
  renderAnswer(answer, turn.answer || "", turn.citations);
  return el("article", { class: "turn" }, renderQuestion(turn.question), answer,
    renderSources(turn.citations));
}

async function ask(question, agent) {
  clearNotice();
  if (!state.session) {
    state.session = newSessionId();
    history.replaceState(null, "", `#/session/${state.session}`);
  }
  $("#intro").hidden = true;
  const list = el("ol");
  const steps = el("details", { class: "steps", open: true },
    el("summary", {}, "Working…"), list);
  const answer = el("div", { class: "answer pending", "aria-busy": "true" });
  const reading = el("div", { class: "reading muted", role: "status", hidden: true });
  const sources = el("div");
  const meta = el("div", { class: "turn-meta" });
  const turn = el("article", { class: "turn" }, renderQuestion(question), steps, reading, answer,
    sources, meta);
  $("#conversation").append(turn);
  turn.scrollIntoView({ block: "end" });

  const controller = new AbortController();
  setRunning(controller);
  const timings = window.sleuthTimings = { asked: performance.now() };
  let text = "";
  let count = 0;
  try {
    const response = await api("/v1/ask/stream", { method: "POST", raw: true,
      json: { question, agent, session: state.session }, signal: controller.signal });
    for await (const { name, data } of events(response)) {
      if (name === "step") {
        stopReading(reading);
        // text streamed before a tool call was the model thinking aloud, not the answer
        if (text) { text = ""; answer.textContent = ""; }
        count += 1;
        list.append(renderStep(data));
        steps.querySelector("summary").textContent = `Working… ${count} step${count === 1 ? "" : "s"}`;
      } else if (name === "context") {
        list.append(renderContextEvent(data));
      } else if (name === "progress") {
        showReading(reading, data);
      } else if (name === "token") {
        stopReading(reading);
        if (!text) Object.assign(timings, { firstToken: performance.now(), firstTokenEpoch: Date.now() });
        text += data.text;
        answer.textContent = text;
      } else if (name === "answer") {
        timings.answer = performance.now();
        answer.classList.remove("pending");
        renderAnswer(answer, data.answer || "", data.citations);
        sources.replaceWith(renderSources(data.citations) || el("div"));
        steps.querySelector("summary").textContent =
          `${count} step${count === 1 ? "" : "s"}${data.route ? ` · routed to ${data.route.agent}` : ""}`;
        if (count === 0) steps.hidden = true;
        else steps.open = false;
        meta.textContent = `${data.agent || agent} · ${data.llm_calls ?? "?"} LLM call(s) · ${data.seconds ?? "?"} s`;
      } else if (name === "error") {
        throw new ApiError(data.detail || "The agent failed.", data.status);
      }
    }
  } catch (err) {
    answer.classList.remove("pending");
    if (err.name === "AbortError") {
      answer.textContent = text || "Stopped.";
    } else {
      answer.classList.add("error");
      answer.textContent = err.message;
    }
    steps.querySelector("summary").textContent = `${count} step${count === 1 ? "" : "s"}`;
  } finally {
    stopReading(reading);
    answer.removeAttribute("aria-busy");
    setRunning(null);
    loadSessions();
  }
}

function setRunning(controller) {
  state.running = controller;
  $("#ask-button").disabled = Boolean(controller);
  $("#stop-button").hidden = !controller;
}

// ---------------------------------------------------------------- sessions

async function loadSessions() {
  let sessions;
  try {
    sessions = await api("/v1/sessions");
  } catch (err) {
    if (err.status !== 401) notify(`Sessions: ${err.message}`);
    return;
  }
  sessions.sort((a, b) => String(b.updated || "").localeCompare(String(a.updated || "")));
  const list = $("#sessions");
  list.textContent = "";
  for (const s of sessions) list.append(sessionItem(s));
  $("#sessions-empty").hidden = sessions.length > 0;
}

function sessionItem(s) {
  const title = s.title || s.first_question || s.id;
  const item = el("li", { class: s.id === state.session ? "current" : "", "data-id": s.id },
    el("a", { href: `#/session/${encodeURIComponent(s.id)}`, title }, title));
  const rename = el("button", { type: "button", class: "ghost small", text: "Rename",
    "aria-label": `Rename “${title}”`, onclick: () => startRename(item, s, title) });
  const remove = el("button", { type: "button", class: "ghost small", text: "Delete",
    "aria-label": `Delete “${title}”`, onclick: () => confirmDelete(remove, s) });
  item.append(el("div", { class: "meta" }, `${s.turns} turn${s.turns === 1 ? "" : "s"}`, rename, remove));
  return item;
}

function startRename(item, s, title) {
  const input = el("input", { type: "text", value: title, maxlength: "200",
    "aria-label": "New session name" });
  const save = async () => {
    const name = input.value.trim();
    if (!name) { notify("A session name cannot be empty."); input.focus(); return; }
    try {
      await api(`/v1/sessions/${encodeURIComponent(s.id)}`, { method: "PATCH", json: { title: name } });
      clearNotice();
    } catch (err) { notify(`Rename: ${err.message}`); }
    loadSessions();
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter") { event.preventDefault(); save(); }
    if (event.key === "Escape") loadSessions();
  });
  item.replaceChildren(input, el("div", { class: "meta" },
    el("button", { type: "button", class: "small", text: "Save", onclick: save }),
    el("button", { type: "button", class: "ghost small", text: "Cancel", onclick: loadSessions })));
  input.focus();
  input.select();
}

function confirmDelete(button, s) {
  if (button.dataset.armed) {
    api(`/v1/sessions/${encodeURIComponent(s.id)}`, { method: "DELETE" })
      .then(() => { if (state.session === s.id) location.hash = "#/"; loadSessions(); })
      .catch((err) => notify(`Delete: ${err.message}`));
    return;
  }
  arm(button, s.title || s.first_question || s.id);
}

// A delete button asks once more before it deletes; its accessible name says so too.
function arm(button, what) {
  button.dataset.armed = "1";
  button.textContent = "Really delete?";
  button.setAttribute("aria-label", `Really delete ${what}?`);
  button.classList.add("danger");
  button.focus();
}

async function showSession(id) {
  state.session = id;
  showView("ask");
  $("#conversation").textContent = "";
  $("#intro").hidden = true;
  highlightSession();
  try {
    const session = await api(`/v1/sessions/${encodeURIComponent(id)}`);
    for (const turn of session.turns || []) $("#conversation").append(renderTurn(turn));
    if (session.agent) selectAgent(session.agent);
  } catch (err) {
    if (err.status === 404) {
      $("#intro").hidden = false;  // a new id: the first question creates it
    } else {
      notify(err.message);
    }
  }
}

function highlightSession() {
  for (const item of document.querySelectorAll("#sessions li")) {
    item.classList.toggle("current", item.dataset.id === state.session);
  }
}

// ---------------------------------------------------------------- passages

async function openPassage(citation, { full = false } = {}) {
  const params = new URLSearchParams();
  if (citation.doc_id) params.set("doc", citation.doc_id);
  if (citation.chunk_id) params.set("chunk", citation.chunk_id);
  if (citation.lines) params.set("lines", `${citation.lines[0]}-${citation.lines[1]}`);
  if (citation.page) params.set("page", String(citation.page));
  if (citation.support && citation.chunk_id) params.set("support", citation.support.slice(0, SUPPORT_MAX));
  const target = full ? $("#passage-full") : $("#passage-body");
  if (!full) {
    $("#passage").hidden = false;
    $("#passage-title").textContent = citation.title || citation.doc_id || "Passage";
  }
  target.replaceChildren(el("p", { class: "muted" }, "Loading the passage…"));
  let passage;
  try {
    passage = await api(`/v1/passage?${params}`);
  } catch (err) {
    target.replaceChildren(el("p", { class: "answer error" }, err.message));
    return;
  }
  const title = passage.title || passage.doc_id;
  if (!full) $("#passage-title").textContent = title;
  target.replaceChildren(...renderPassage(passage, citation, full));
  const first = target.querySelector("li.hl");
  if (first) first.scrollIntoView({ block: "center" });
  if (!full) $("#passage-close").focus({ preventScroll: true });
}

function renderPassage(passage, citation, full) {
  const facts = [passage.doc_id, passage.collection && `collection ${passage.collection}`,
    passage.type, passage.page && `page ${passage.page}${passage.pages ? ` of ${passage.pages}` : ""}`,
    citation.tool && `found by ${citation.tool}`].filter(Boolean).join(" · ");
  const parts = [];
  if (full) parts.push(el("h2", {}, passage.title || passage.doc_id));
  parts.push(el("p", { class: "facts" }, facts));
  if (passage.support) {
    const terms = passage.support.terms.length ? ` (${passage.support.terms.join(", ")})` : "";
    parts.push(el("p", { class: "facts support-note" },
      el("mark", {}, "Marked"), `: what supports the claim, the sentence sharing the most words with it${terms}; `,
      el("span", { class: "chunk-shade" }, "shaded"), ": the rest of the cited passage."));
  } else if (citation.support && citation.chunk_id && passage.highlight) {
    parts.push(el("p", { class: "facts support-note" },
      "No sentence of the cited passage shares a word with the claim: the whole passage is highlighted."));
  }
  if (passage.pages && passage.page) {
    const go = (page) => openPassage({ doc_id: passage.doc_id, title: passage.title, page,
      tool: citation.tool }, { full });
    parts.push(el("div", { class: "pager" },
      el("button", { type: "button", class: "small", disabled: passage.page <= 1,
        onclick: () => go(passage.page - 1) }, "‹ Previous page"),
      el("button", { type: "button", class: "small", disabled: passage.page >= passage.pages,
        onclick: () => go(passage.page + 1) }, "Next page ›")));
  }
  // The cited lines are highlighted; with support, only its lines are ("hl"), the sentences
  // marked on them, and the rest of the cited chunk is shaded ("hl-chunk").
  const [from, to] = passage.highlight || [-1, -2];
  const [supportFrom, supportTo] = passage.support ? passage.support.lines : [from, to];
  const marks = new Map((passage.support ? passage.support.marks : []).map((m) => [m.line, m]));
  let page = null;
  const lines = el("ol", { class: "lines", "aria-label": "Document lines" });
  for (const line of passage.lines || []) {
    const classes = [];
    if (line.number >= supportFrom && line.number <= supportTo) classes.push("hl");
    else if (line.number >= from && line.number <= to) classes.push("hl-chunk");
    const mark = marks.get(line.number);
    if (mark) classes.push("marked");
    if (page !== null && line.page !== page) classes.push("page-break");
    page = line.page;
    lines.append(el("li", { class: classes.join(" ") || null },
      el("span", { class: "n" }, String(line.number)), lineText(line.text, mark)));
  }
  parts.push(lines);
  if (passage.image) {
    const image = el("img", { class: "page", alt: `Page ${passage.page} of ${passage.title || passage.doc_id}` });
    parts.push(el("details", { class: "page-image" }, el("summary", {}, "Page image"), image));
    loadImage(image, passage.image);
  }
  return parts;
}

// A line's text, with the characters [mark.start, mark.end) (code points, as the server counts
// them) in a <mark>.
function lineText(text, mark) {
  if (!mark) return el("span", { class: "t" }, text);
  const chars = Array.from(text);
  return el("span", { class: "t" }, chars.slice(0, mark.start).join(""),
    el("mark", {}, chars.slice(mark.start, mark.end).join("")), chars.slice(mark.end).join(""));
}

// The page image needs the API key, which an <img src> cannot send: fetch it, then show it.
async function loadImage(image, url) {
  try {
    const blob = await (await api(url, { raw: true })).blob();
    image.src = URL.createObjectURL(blob);
  } catch (err) {
    image.replaceWith(el("p", { class: "muted" }, `No page image: ${err.message}`));
  }
}

function closePassage() {
  $("#passage").hidden = true;
  $("#question").focus();
}

// ---------------------------------------------------------------- documents

async function loadDocuments() {
  const query = $("#doc-filter").value.trim();
  const params = new URLSearchParams({ limit: "1000" });
  if (query) params.set("q", query);
  let listed;
  try {
    listed = await api(`/v1/documents?${params}`);
  } catch (err) {
    if (err.status !== 401) notify(`Documents: ${err.message}`);
    return;
  }
  state.documents = listed.documents;
  const body = $("#documents tbody");
  body.textContent = "";
  for (const d of listed.documents) {
    const remove = el("button", { type: "button", class: "ghost small", text: "Delete",
      "aria-label": `Delete ${d.title || d.doc_id}`, onclick: () => deleteDocument(remove, d) });
    body.append(el("tr", { "data-id": d.doc_id },
      el("td", {}, el("a", { href: passageHash({ doc_id: d.doc_id, page: d.pages ? 1 : null }) },
        d.title || d.doc_id),
        el("div", { class: "id" }, d.doc_id)),
      el("td", {}, d.collection || ""), el("td", {}, d.type || ""),
      el("td", { class: "num" }, d.pages ?? ""), el("td", { class: "num" }, String(d.chunks ?? "")),
      el("td", {}, remove)));
  }
  $("#doc-count").textContent = listed.total === listed.documents.length
    ? `${listed.total} document${listed.total === 1 ? "" : "s"}`
    : `${listed.documents.length} of ${listed.total} documents`;
  if (!listed.total && !query) {
    body.append(el("tr", {}, el("td", { colspan: "6", class: "muted" },
      "No documents yet: drop files above to index them.")));
  }
}

function deleteDocument(button, d) {
  if (!button.dataset.armed) {
    arm(button, d.title || d.doc_id);
    return;
  }
  api(`/v1/documents/${encodeURIComponent(d.doc_id)}`, { method: "DELETE" })
    .then(() => { clearNotice(); loadDocuments(); })
    .catch((err) => notify(`Delete ${d.title || d.doc_id}: ${err.message}`));
}

function formatBytes(n) {
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function uploadFiles(files) {
  for (const file of files) uploadOne(file);
}

// One request per file, so that each file shows its own progress and its own result.
function uploadOne(file) {
  const bar = el("progress", { max: "1", value: "0", "aria-label": `Uploading ${file.name}` });
  const status = el("span", { class: "state" }, "uploading…");
  const row = el("li", { "data-name": file.name }, el("span", {}, file.name), bar, status);
  $("#uploads").prepend(row);
  const done = (ok, message) => {
    bar.value = 1;
    bar.hidden = true;
    status.className = ok ? "state ok" : "state error";
    status.textContent = message;
  };
  const limit = state.limits.max_body_bytes;
  if (limit && file.size > limit) {
    done(false, `${formatBytes(file.size)} is over this server's upload limit of ${formatBytes(limit)}.`);
    return;
  }
  const form = new FormData();
  form.append("files", file, file.name);
  const request = new XMLHttpRequest();
  request.open("POST", "/v1/documents");
  for (const [name, value] of Object.entries(authHeaders())) request.setRequestHeader(name, value);
  request.upload.addEventListener("progress", (event) => {
    if (event.lengthComputable) bar.value = event.loaded / event.total;
  });
  request.addEventListener("error", () => done(false, "The upload failed: the server cannot be reached."));
  request.addEventListener("load", () => {
    let body = {};
    try { body = JSON.parse(request.responseText); } catch (_) { /* shown by status below */ }
    if (request.status === 401) {
      done(false, "An API key is needed, or this one was refused.");
      askForKey("This server needs a valid API key to upload.");
      return;
    }
    if (request.status >= 400) {
      done(false, body.detail || `The server answered ${request.status}.`);
      return;
    }
    const result = (body.files || []).find((f) => f.name === file.name) || (body.files || [])[0];
    if (result && result.status === "error") done(false, result.error || "not indexed");
    else if (result && result.status === "unchanged") done(true, "already indexed, unchanged");
    else done(true, result && result.chunks !== undefined ? `indexed · ${result.chunks} chunks` : "indexed");
    loadDocuments();
  });
  request.send(form);
}

// ---------------------------------------------------------------- views and start-up

function showView(name) {
  for (const view of ["ask", "documents", "passage"]) {
    $(`#view-${view}`).hidden = view !== name;
  }
  $("#nav-ask").toggleAttribute("aria-current", name === "ask");
  $("#nav-documents").toggleAttribute("aria-current", name === "documents");
  if (name === "ask") $("#nav-ask").setAttribute("aria-current", "page");
  if (name === "documents") $("#nav-documents").setAttribute("aria-current", "page");
}

function route() {
  const hash = location.hash || "#/";
  const [path, query = ""] = hash.slice(1).split("?");
  if (path === "/documents") {
    showView("documents");
    loadDocuments();
  } else if (path === "/passage") {
    showView("passage");
    openPassage(parsePassage(query), { full: true });
  } else if (path.startsWith("/session/")) {
    const id = decodeURIComponent(path.slice("/session/".length));
    if (id !== state.session || !$("#conversation").childElementCount) showSession(id);
    else showView("ask");
  } else {
    state.session = null;
    $("#conversation").textContent = "";
    $("#intro").hidden = false;
    showView("ask");
    highlightSession();
  }
}

// The agents by plain name (GET /v1/agents), the server's default first and chosen unless this
// tab chose another; under the selector, the chosen one's line and research name.
const agents = new Map();
let defaultAgent = "";

function selectAgent(name) {
  const select = $("#agent");
  if (![...select.options].some((o) => o.value === name)) select.append(el("option", { value: name }, name));
  select.value = name;
  describeAgent();
}

function describeAgent() {
  const about = $("#agent-about");
  const agent = agents.get($("#agent").value);
  about.replaceChildren(...(agent ? [agent.summary, " ", el("small", { class: "research" }, agent.name)] : []));
}

async function loadAgents() {
  const select = $("#agent");
  try {
    const listed = await api("/v1/agents");
    for (const agent of listed) agents.set(agent.name, agent);
    select.replaceChildren(...listed.map((a) => el("option", { value: a.name, title: a.summary }, a.label)));
    defaultAgent = (listed.find((a) => a.default) || listed[0] || {}).name || "";
  } catch (_) { /* an older server: the agents by name, the first its default */
    try {
      const models = await api("/v1/models");
      const names = models.data.map((m) => m.id.replace(/^sleuth-/, ""));
      select.replaceChildren(...names.map((n) => el("option", { value: n }, n)));
      defaultAgent = names[0] || "";
    } catch (_) { /* no agents to list: the server's default answers */ }
  }
  const chosen = sessionStorage.getItem(AGENT_STORE);
  selectAgent(chosen && agents.has(chosen) ? chosen : defaultAgent);
}

async function start() {
  let status;
  try {
    status = await api("/v1/status");
  } catch (err) {
    if (err.status !== 401) notify(err.message);
    return;
  }
  state.limits = status.limits || {};
  const caller = status.caller || {};
  $("#who").textContent = `${status.documents} document${status.documents === 1 ? "" : "s"}` +
    (caller.name && caller.name !== "local" ? ` · ${caller.name}` : "") +
    (caller.collection ? ` · ${caller.collection}` : "");
  await loadAgents();
  loadSessions();
  route();
}

function wire() {
  $("#ask-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const question = $("#question").value.trim();
    if (!question) { notify("Type a question first."); $("#question").focus(); return; }
    if (state.running) return;
    $("#question").value = "";
    ask(question, $("#agent").value);
  });
  $("#question").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("#ask-form").requestSubmit();
    }
  });
  $("#agent").addEventListener("change", () => {
    sessionStorage.setItem(AGENT_STORE, $("#agent").value);
    describeAgent();
  });
  $("#stop-button").addEventListener("click", () => state.running && state.running.abort());
  $("#new-session").addEventListener("click", () => {
    location.hash = "#/";
    $("#question").focus();
  });
  $("#notice-close").addEventListener("click", clearNotice);
  $("#passage-close").addEventListener("click", closePassage);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && !$("#passage").hidden && !$("#key-dialog").open) closePassage();
  });
  $("#key-button").addEventListener("click", () => askForKey());
  $("#key-form").addEventListener("submit", () => setKey($("#key-input").value));
  $("#key-clear").addEventListener("click", () => { $("#key-dialog").close(); setKey(""); });
  $("#key-cancel").addEventListener("click", () => $("#key-dialog").close());
  $("#doc-filter").addEventListener("input", debounce(loadDocuments, 250));
  const drop = $("#drop");
  drop.addEventListener("dragover", (event) => { event.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    uploadFiles(event.dataTransfer.files);
  });
  drop.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); $("#files").click(); }
  });
  $("#files").addEventListener("change", () => { uploadFiles($("#files").files); $("#files").value = ""; });
  window.addEventListener("hashchange", route);
}

function debounce(fn, ms) {
  let timer = null;
  return () => { clearTimeout(timer); timer = setTimeout(fn, ms); };
}

wire();
start();
