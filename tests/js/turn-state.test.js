// The turn's state machine (web/static/panel-turn.js) fed recorded frame sequences: no DOM,
// no socket. Run: node --test tests/js (or npm test --prefix tests/js).
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const {TurnState, wordWarning} = require("../../web/static/panel-turn.js");

global.window = {};
require("../../web/static/panel-i18n.js");
const I18N = window.BecomeAssistantI18n;

// The checks' warnings as the panel words them: its texts in `lang` (English where one is
// missing), placeholders filled as panel.js's translate does.
function worded(state, lang, extra) {
  const table = {...I18N[lang || "en"], ...(extra || {})};
  const text = (key) => (table[key] !== undefined ? table[key] : I18N.en[key]);
  const has = (key) => text(key) !== undefined;
  const t = (key, params) => text(key).replace(/\{(\w+)\}/g, (m, name) =>
    params && params[name] !== undefined ? String(params[name]) : m);
  return state.warnings().map((w) => wordWarning(w, has, t)).filter((s) => s !== null);
}

function doneWith(checks, more) {
  const s = new TurnState();
  s.start();
  feed(s, frames([{type: "accepted"}, {...DONE, checks: checks, ...(more || {})}]));
  return s;
}

const TURN = "a".repeat(32);

// Frames as the server sends them: seq from 0, the turn id on each.
function frames(list) {
  return list.map((f, seq) => ({turn: TURN, seq: seq, ...f}));
}

// Feed frames; returns every change reported, in order.
function feed(state, list) {
  const changes = [];
  for (const f of list) changes.push(...state.accept(f));
  return changes;
}

function statuses(changes) {
  return changes.filter((c) => c.type === "status").map((c) => c.key);
}

function clock(times) {  // a clock that reads the given times, then stays at the last
  let i = 0;
  return () => times[Math.min(i++, times.length - 1)];
}

const SOURCES = [
  {n: 1, title: "Method", section: "Method > Scale", excerpt: "Text.", source: "m.pdf"},
  {n: 2, title: "Search", section: "Search", excerpt: "More.", source: "s.pdf"},
];
const DONE = {type: "done", answer: "BM25 and vectors [1], fused [2].", sources: SOURCES,
  checks: {citations: {valid: true, cited: [1, 2], invalid: []},
    numbers: {valid: false, unconfirmed: ["42 %"], checked: 1}},
  usage: {}, timing: {total_ms: 812}, index: "v1", language: "en"};

const STREAMED = frames([
  {type: "accepted"},
  {type: "event", step: "language", start_ms: 0, ms: 1, language: "en"},
  {type: "event", step: "retrieve", start_ms: 1, ms: 20, passages: 2},
  {type: "event", step: "prompt", start_ms: 21, ms: 1},
  {type: "token", text: "BM25 and vectors [1]"},
  {type: "token", text: ", fused "},
  {type: "token", text: "[2]."},
  DONE,
]);

test("tokens stream into the text and the done frame ends the turn with its sources", () => {
  const s = new TurnState({now: clock([1000, 1450])});
  const started = s.start();
  assert.deepEqual(statuses(started), ["status.connecting"]);
  const changes = feed(s, STREAMED.slice(0, 7));
  assert.equal(s.turnId, TURN);
  assert.equal(s.phase, "streaming");
  assert.equal(s.text, "BM25 and vectors [1], fused [2].");
  assert.equal(s.streamed, s.text);
  assert.equal(s.passages, 2);
  assert.equal(s.events.length, 3);
  assert.equal(s.firstWordMs, 450);
  // The status names the step running next; the first word once, not again per token.
  assert.deepEqual(statuses(changes),
    ["status.searching", "status.searching", "status.model", "status.model",
      "status.writing"]);
  assert.equal(changes.filter((c) => c.type === "text").length, 3);
  assert.equal(changes.filter((c) => c.type === "steps").length, 3);
  // Before done: a number within the passages is a citation, one outside is not.
  assert.equal(s.citationState(2), "valid");
  assert.equal(s.citationState(3), "invalid");
  assert.equal(s.citationState(0), "invalid");
  assert.equal(s.tripleIsCitation([1, 2, 2]), true);
  assert.equal(s.tripleIsCitation([1, 2, 7]), false);

  const end = s.accept(STREAMED[7]);
  assert.deepEqual(end, [{type: "end", outcome: "done"}]);
  assert.equal(s.finished, true);
  assert.equal(s.phase, "done");
  assert.equal(s.done.sources.length, 2);
  assert.equal(s.done.checks.numbers.unconfirmed[0], "42 %");
  // After done: exactly the numbers of the source list are citations, the triple as checked.
  assert.equal(s.citationState(1), "valid");
  assert.equal(s.citationState(3), "invalid");
  assert.equal(s.tripleIsCitation([1, 2, 1]), true);
  assert.equal(s.tripleIsCitation([1, 2, 3]), false);
  assert.deepEqual(s.seqLog, [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.equal(s.gaps, 0);
  // Nothing changes a finished turn.
  assert.deepEqual(s.accept({turn: TURN, seq: 8, type: "token", text: "late"}), []);
  assert.equal(s.text, DONE.answer);
});

test("the done frame's answer is the text, whatever the tokens said", () => {
  const s = new TurnState();
  s.start();
  feed(s, frames([{type: "accepted"}, {type: "token", text: "With [1] mark"},
    {...DONE, answer: "With  mark"}]));
  assert.equal(s.text, "With  mark");
  assert.equal(s.streamed, "With [1] mark");
});

test("a resume that repeats frames adds no text twice", () => {
  const s = new TurnState();
  s.start();
  feed(s, STREAMED.slice(0, 6));
  const before = s.text;
  // The server replays from the seq asked for; a duplicate delivery repeats a few of them.
  const replay = [STREAMED[4], STREAMED[5], STREAMED[5], STREAMED[6], STREAMED[6], STREAMED[7]];
  const changes = feed(s, replay);
  assert.equal(before, "BM25 and vectors [1], fused ");
  assert.equal(s.text, DONE.answer);
  assert.equal(s.streamed, "BM25 and vectors [1], fused [2].");
  assert.deepEqual(s.seqLog, [0, 1, 2, 3, 4, 5, 6, 7], "each seq once");
  assert.equal(changes.filter((c) => c.type === "text").length, 1);
  assert.equal(s.finished, true);
});

test("pings and unknown frames change nothing", () => {
  const s = new TurnState();
  s.start();
  const changes = feed(s, [{type: "ping"}, {type: "pong"}, {type: "ping", seq: 3},
    {turn: TURN, seq: 0, type: "accepted"}, {turn: TURN, seq: 1, type: "something-new"},
    null, "text", {turn: TURN, seq: 2, type: "token", text: 42}]);
  assert.deepEqual(statuses(changes), ["status.searching", "status.writing"]);
  assert.equal(s.seq, 2);
  assert.equal(s.text, "", "a token without text adds nothing");
});

test("a gap is counted and the frame after it is still taken", () => {
  const s = new TurnState();
  s.start();
  feed(s, [{turn: TURN, seq: 0, type: "accepted"}, {turn: TURN, seq: 1, type: "token", text: "a"},
    {turn: TURN, seq: 3, type: "token", text: "c"},
    {turn: TURN, seq: 2, type: "token", text: "b"}]);  // late: already past it
  assert.equal(s.gaps, 1);
  assert.equal(s.text, "ac");
  assert.deepEqual(s.seqLog, [0, 1, 3]);
});

test("a restart empties the text and is listed among the steps", () => {
  const s = new TurnState();
  s.start();
  const changes = feed(s, frames([
    {type: "accepted"}, {type: "token", text: "Old partial "}, {type: "restart", attempt: 2},
    {type: "token", text: "New answer"}]));
  assert.equal(s.text, "New answer");
  assert.equal(s.streamed, "New answer");
  assert.deepEqual(s.events, [{step: "restart", attempt: 2, restart: true}]);
  assert.deepEqual(statuses(changes),
    ["status.searching", "status.writing", "status.restart", "status.writing"]);
});

test("error frames end the turn: a stop as stopped, anything else as an error", () => {
  const failed = new TurnState();
  failed.start();
  const changes = feed(failed, frames([{type: "accepted"}, {type: "token", text: "Part"},
    {type: "error", code: 504, message: "The model did not answer in time."}]));
  assert.deepEqual(changes[changes.length - 1], {type: "end", outcome: "error"});
  assert.equal(failed.phase, "error");
  assert.equal(failed.error.code, 504);
  assert.equal(failed.citationState(1), "plain", "no links in a failed answer");

  const stopped = new TurnState();
  stopped.start();
  feed(stopped, frames([{type: "accepted"}, {type: "token", text: "Part"}]));
  assert.deepEqual(stopped.cancel(), [{type: "status", key: "status.stopping"}]);
  assert.deepEqual(stopped.cancel(), [], "a second stop does nothing");
  assert.deepEqual(feed(stopped, [{turn: TURN, seq: 2, type: "token", text: " more"}]),
    [{type: "text"}], "no writing status after a stop");
  assert.deepEqual(stopped.accept({turn: TURN, seq: 3, type: "error", code: 499,
    message: "Stopped."}), [{type: "end", outcome: "stopped"}]);
  assert.equal(stopped.phase, "stopped");

  // A refusal without a seq (a rate limit on the ask) ends the turn too.
  const refused = new TurnState();
  refused.start();
  assert.deepEqual(refused.accept({type: "error", seq: null, code: 429,
    message: "Please wait a moment.", retry_after: 30}), [{type: "end", outcome: "error"}]);
  assert.equal(refused.error.retry_after, 30);
});

test("the transport giving up ends the turn once", () => {
  const s = new TurnState();
  s.start();
  feed(s, frames([{type: "accepted"}]));
  assert.deepEqual(statuses(s.reconnecting()), ["status.reconnecting"]);
  assert.deepEqual(s.fail({code: 0, local: "error.lost"}), [{type: "end", outcome: "error"}]);
  assert.deepEqual(s.fail({code: 0, local: "error.connection"}), []);
  assert.equal(s.error.local, "error.lost");
  assert.deepEqual(s.reconnecting(), []);
});

test("a project turn says it reads the project; a stop before acceptance says stopping", () => {
  const s = new TurnState({project: {id: "p1", name: "Office move"}});
  s.start();
  s.cancel();
  const changes = feed(s, frames([{type: "accepted"},
    {type: "event", step: "retrieve", passages: 4, start_ms: 0, ms: 3}]));
  assert.deepEqual(statuses(changes), ["status.stopping"], "a stopped turn names no steps");

  const p = new TurnState({project: {id: "p1", name: "Office move"}});
  p.start();
  const steps = feed(p, frames([{type: "accepted"}, {type: "event", step: "retrieve",
    passages: 4, start_ms: 0, ms: 3}, {type: "event", step: "project", start_ms: 3, ms: 9}]));
  assert.deepEqual(statuses(steps), ["status.searching", "status.project", "status.model"]);
});

test("the first_token event reports the first word before any token", () => {
  const s = new TurnState({now: clock([0, 2400, 9999])});
  s.start();
  const changes = feed(s, frames([{type: "accepted"},
    {type: "event", step: "first_token", start_ms: 2390}, {type: "token", text: "Hi"}]));
  assert.equal(s.firstWordMs, 2400);
  assert.deepEqual(statuses(changes), ["status.searching", "status.writing"]);
});

test("a saved turn comes back finished, its answer or its error", () => {
  const done = TurnState.restored({question: "q", project: {id: "p", name: "P"}, done: DONE});
  assert.equal(done.finished, true);
  assert.equal(done.phase, "done");
  assert.equal(done.text, DONE.answer);
  assert.equal(done.project.name, "P");
  assert.equal(done.citationState(2), "valid");
  const lost = TurnState.restored({question: "q", done: null, error: null});
  assert.equal(lost.phase, "error");
  assert.deepEqual(lost.error, {code: 0, local: "error.lost"});
  assert.deepEqual(lost.accept(STREAMED[0]), []);
});

test("a running turn's snapshot carries on after a reload from its last seq", () => {
  const s = new TurnState({now: clock([0, 1500])});
  s.start();
  feed(s, frames([{type: "accepted"}, {type: "event", step: "retrieve", passages: 2, ms: 3},
    {type: "token", text: "Half "}]));
  const saved = JSON.parse(JSON.stringify(s.snapshot()));
  const again = TurnState.resumed(Object.assign({project: null}, saved));
  assert.equal(again.turnId, TURN);
  assert.equal(again.seq, 2);
  assert.equal(again.text, "Half ");
  assert.equal(again.phase, "streaming");
  assert.equal(again.firstWordMs, 1500, "the first word came before the reload");
  assert.equal(again.events.length, 1);
  // A repeated frame is dropped; the next one goes on from the saved text.
  assert.deepEqual(again.accept({turn: TURN, seq: 2, type: "token", text: "Half "}), []);
  again.accept({turn: TURN, seq: 3, type: "token", text: "done"});
  assert.equal(again.text, "Half done");
  assert.equal(again.gaps, 0);
});

test("after a drop the status says so, counts from the drop, and comes back on reconnect", () => {
  const s = new TurnState({now: clock([0, 10, 5000])});
  s.start();
  feed(s, frames([{type: "accepted"}]));
  assert.equal(s.status, "status.searching");
  assert.deepEqual(statuses(s.reconnecting(4200)), ["status.reconnecting"]);
  assert.equal(s.droppedAt, 4200);
  assert.deepEqual(statuses(s.reconnected()), ["status.searching"]);
  assert.equal(s.droppedAt, null);
  assert.deepEqual(s.reconnected(), [], "once");
});

test("the checks' warnings: a failed check names what to verify, one that could not run says so", () => {
  const s = new TurnState();
  s.start();
  feed(s, STREAMED);
  assert.deepEqual(worded(s), ["These numbers were not found in the sources: 42 %. Check them " +
    "before you rely on them."]);

  // A bug inside a check on the server keeps the answer; the check is unavailable,
  // neither passed (no silence) nor failed (no invented list).
  const t = new TurnState();
  t.start();
  feed(t, frames([{type: "accepted"}, {type: "token", text: "It is 7 [1]."},
    {...DONE, answer: "It is 7 [1].", checks: {
      citations: {valid: true, cited: [1], invalid: []},
      numbers: {valid: null, unavailable: true},
      quotes: {valid: null, unavailable: true}}}]));
  assert.equal(t.phase, "done");
  assert.equal(t.text, "It is 7 [1].");
  assert.deepEqual(worded(t), [
    "The number check could not run on this answer. Check its numbers before you rely on them.",
    "A check of this answer could not run. Verify it before you rely on it."]);

  const u = new TurnState();
  u.start();
  feed(u, frames([{type: "accepted"}, {...DONE, checks: {
    citations: {valid: null, unavailable: true}, numbers: {valid: true, unconfirmed: []}}}]));
  assert.deepEqual(worded(u), ["The citation check could not run on this answer. Verify its " +
    "statements in the documentation."]);
});

test("each check's warning is worded from the panel's texts alone, none named in code", () => {
  const one = doneWith({citations: {valid: false, cited: [1, 7], invalid: [7]}});
  assert.deepEqual(worded(one), ["The citation [7] points at no source. Verify that statement " +
    "in the documentation."]);
  const two = doneWith({citations: {valid: false, cited: [7, 9], invalid: [7, 9]}});
  assert.deepEqual(worded(two, "cs"), ["Citace [7], [9] neodkazují na žádný zdroj. Ověřte tato " +
    "tvrzení v dokumentaci."]);
  const none = doneWith({numbers: {valid: false, unconfirmed: [], checked: 2}});
  assert.deepEqual(worded(none), ["Some numbers in this answer were not found in the sources. " +
    "Check them before you rely on them."]);
  const quotes = doneWith({quotes: {valid: false, not_found: ["a, b", "c"]},
    source_paths: {valid: false, invalid: ["docs/x.md"]}});
  assert.deepEqual(worded(quotes), ["These quotes were not found in their sources: “a, b”, “c”.",
    "These source paths do not exist: docs/x.md."]);
  // A list the wording names but the block leaves empty, and no `.none` text: nothing to say.
  assert.deepEqual(worded(doneWith({quotes: {valid: false, not_found: []}})), []);

  // A check the panel has never heard of: a plain warning, then its own words once written.
  const dates = doneWith({dates: {valid: false, wrong: ["2031", "2032"]}});
  assert.deepEqual(worded(dates), ["A check of this answer failed. Verify it before you rely " +
    "on it."]);
  assert.deepEqual(worded(dates, "en", {"checks.dates": "Dates not in the sources: {wrong}."}),
    ["Dates not in the sources: 2031, 2032."]);
  // Order: the frame's (the registry's), failed checks, weak sources, then the unavailable.
  const all = doneWith({citations: {valid: null, unavailable: true},
    numbers: {valid: false, unconfirmed: ["5"]}, repeat: {valid: false, earlier: 1}},
  {sources: SOURCES.map((src) => ({...src, weak: true}))});
  assert.deepEqual(worded(all).map((w) => w.slice(0, 20)), ["These numbers were n",
    "This answer repeats ", "The documentation ha", "The citation check c"]);
});

test("prompt echo, repeat and weak matches are warned about", () => {
  const ok = {citations: {valid: true, cited: [1], invalid: []},
    numbers: {valid: true, unconfirmed: [], checked: 0}};
  const s = new TurnState();
  s.start();
  feed(s, frames([{type: "accepted"}, {...DONE, answer: "<passage> x", checks: {...ok,
    prompt_echo: {valid: false, markup: ["<passage>"], instructions: []},
    repeat: {valid: false, earlier: 1, similarity: 1.0}}}]));
  assert.deepEqual(worded(s), [
    "This answer repeats the assistant's own instructions instead of answering. Do not rely " +
    "on it; try asking in other words.",
    "This answer repeats an earlier answer of this conversation. It may not answer your new " +
    "question."]);

  const weak = (flag) => SOURCES.map((src) => ({...src, weak: flag}));
  const w = new TurnState();
  w.start();
  feed(w, frames([{type: "accepted"}, {...DONE, sources: weak(true), checks: {...ok,
    prompt_echo: {valid: true, markup: [], instructions: []},
    repeat: {valid: true, earlier: null, similarity: 0}}}]));
  assert.deepEqual(worded(w), ["The documentation has no close match for this question: the " +
    "sources below are weak matches only."]);

  // One close match among weak ones is support: no warning, the weak ones keep their badge.
  const mixed = [{...SOURCES[0], weak: false}, ...weak(true).slice(1)];
  const m = new TurnState();
  m.start();
  feed(m, frames([{type: "accepted"}, {...DONE, sources: mixed, checks: ok}]));
  assert.deepEqual(m.warnings(), []);
});
