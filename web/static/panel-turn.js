// One turn's state machine (protocol v1 frames in, a plain state object and change events out).
// No DOM, no socket, no clock of its own: the panel's view renders what changed, the transport
// feeds the frames. Loaded as a plain script (window.BecomeAssistantTurnState) and, for the node
// tests in tests/js, as a CommonJS module.
"use strict";

(function (factory) {
  const api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else window.BecomeAssistantTurnState = api;
})(function () {
  const CANCELLED = 499;
  // What the status line says after each finished step: the step that runs next.
  const NEXT_STATUS = {language: "status.searching", rewrite: "status.searching",
    translate: "status.searching", retrieve: "status.model", rerank: "status.model",
    project: "status.model",
    prompt: "status.model", tool: "status.model", plan: "status.model"};

  // The changes accept() and the other steps report, in the order they happened:
  //   {type: "status", key}   the status line's key (the view formats status.writing's seconds)
  //   {type: "text"}          the answer text changed while it streams (restart empties it)
  //   {type: "steps"}         the step list changed
  //   {type: "end", outcome}  the turn ended: "done", "stopped" or "error"
  class TurnState {
    constructor(opts) {
      const o = opts || {};
      this.project = o.project || null;  // {id, name} of the project asked about, or null
      this.now = o.now || (() => Date.now());
      this.startedAt = 0;
      this.firstWordMs = null;
      this.turnId = null;
      this.seq = -1;
      this.seqLog = [];  // every seq taken, in order (the browser tests check it has no gap)
      this.gaps = 0;  // frames taken after a missing seq (the server promises none)
      this.text = "";
      this.streamed = "";  // the tokens since the last restart, as they came
      this.events = [];
      this.passages = null;
      this.done = null;
      this.error = null;
      this.finished = false;
      this.phase = "waiting";  // then "streaming", and at the end "done", "stopped" or "error"
      this.cancelRequested = false;
      this.status = null;
      this.droppedAt = null;  // when the connection dropped (the status counts from there)
      this.beforeDrop = null;
    }

    // A turn read back from sessionStorage: already finished, its answer or its error.
    static restored(saved) {
      const s = new TurnState({project: saved.project || null});
      s.finished = true;
      s.done = saved.done && typeof saved.done === "object" ? saved.done : null;
      s.error = s.done ? null : saved.error || {code: 0, local: "error.lost"};
      s.text = s.done ? String(s.done.answer || "") : "";
      s.phase = s.done ? "done" : "error";
      return s;
    }

    // A turn that was running when the page was reloaded (snapshot() of it, from
    // sessionStorage): it carries on from its last seq, on a new connection.
    static resumed(saved, opts) {
      const s = new TurnState(Object.assign({}, opts, {project: saved.project || null}));
      s.turnId = typeof saved.turn === "string" ? saved.turn : null;
      s.seq = Number.isInteger(saved.seq) ? saved.seq : -1;
      s.text = typeof saved.text === "string" ? saved.text : "";
      s.streamed = s.text;
      s.events = Array.isArray(saved.events) ? saved.events.filter((e) => e && e.step) : [];
      s.passages = typeof saved.passages === "number" ? saved.passages : null;
      s.phase = s.text ? "streaming" : "waiting";
      // Its first word came before the reload (the status says so, not "after 0 s").
      s.firstWordMs = typeof saved.firstWordMs === "number" ? saved.firstWordMs : null;
      return s;
    }

    // What a reload needs to carry on: the turn id, the last seq and what it had shown.
    snapshot() {
      return {turn: this.turnId, seq: this.seq, text: this.text, events: this.events,
        passages: this.passages, firstWordMs: this.firstWordMs};
    }

    start() {
      this.startedAt = this.now();
      const out = [];
      this.setStatus("status.connecting", out);
      return out;
    }

    // The transport lost the connection (at `since`, the drop's time) and tries again.
    reconnecting(since) {
      const out = [];
      if (this.finished) return out;
      if (this.status !== "status.reconnecting") this.beforeDrop = this.status;
      this.droppedAt = typeof since === "number" ? since : this.now();
      this.setStatus("status.reconnecting", out);
      return out;
    }

    // A new connection is open again: the status says what it said before the drop.
    reconnected() {
      const out = [];
      if (this.finished || this.status !== "status.reconnecting") return out;
      this.droppedAt = null;
      this.setStatus(this.cancelRequested ? "status.stopping"
        : this.beforeDrop || "status.searching", out);
      return out;
    }

    // Stop asked for; no change when the turn has ended or a stop is already on its way.
    cancel() {
      const out = [];
      if (this.finished || this.cancelRequested) return out;
      this.cancelRequested = true;
      this.setStatus("status.stopping", out);
      return out;
    }

    // One frame from the server; frames already seen (a resume may repeat them) change nothing.
    accept(f) {
      const out = [];
      if (this.finished || !f || typeof f !== "object" || f.type === "ping" || f.type === "pong") {
        return out;
      }
      if (typeof f.seq === "number") {
        if (f.seq <= this.seq) return out;
        if (f.seq !== this.seq + 1) this.gaps++;
        this.seq = f.seq;
        this.seqLog.push(f.seq);
      }
      switch (f.type) {
        case "accepted":
          this.turnId = f.turn;
          this.setStatus(this.cancelRequested ? "status.stopping" : "status.searching", out);
          break;
        case "event":
          this.events.push(f);
          if (f.step === "retrieve" && typeof f.passages === "number") this.passages = f.passages;
          this.followStep(f.step, out);
          out.push({type: "steps"});
          break;
        case "token": {
          const text = typeof f.text === "string" ? f.text : "";
          this.text += text;
          this.streamed += text;
          this.phase = "streaming";
          this.firstWord(out);
          out.push({type: "text"});
          break;
        }
        case "restart":  // the worker died and the turn runs again: its text starts over
          this.text = "";
          this.streamed = "";
          this.events.push({step: "restart", attempt: f.attempt, restart: true});
          this.setStatus("status.restart", out);
          out.push({type: "steps"}, {type: "text"});
          break;
        case "done":
          this.finished = true;
          this.done = f;
          this.text = typeof f.answer === "string" ? f.answer : this.text;
          this.phase = "done";
          out.push({type: "end", outcome: "done"});
          break;
        case "error":
          this.fail(f, out);
          break;
        default:
          break;
      }
      return out;
    }

    // The turn ends with an error: a server error frame or the transport giving up.
    fail(f, out) {
      const changes = out || [];
      if (this.finished) return changes;
      this.finished = true;
      this.error = f;
      this.phase = f.code === CANCELLED ? "stopped" : "error";
      changes.push({type: "end", outcome: this.phase});
      return changes;
    }

    // The status names the step now running (the event frame reports the one just finished).
    followStep(step, out) {
      if (this.cancelRequested || this.firstWordMs !== null) return;
      if (step === "first_token") {
        this.firstWord(out);
        return;
      }
      let next = NEXT_STATUS[step];
      if (step === "retrieve" && this.project) next = "status.project";
      if (next) this.setStatus(next, out);
    }

    firstWord(out) {
      if (this.firstWordMs === null) this.firstWordMs = this.now() - this.startedAt;
      if (!this.cancelRequested && this.status !== "status.writing") {
        this.setStatus("status.writing", out);
      }
    }

    setStatus(key, out) {
      this.status = key;
      out.push({type: "status", key: key});
    }

    // How a [n] in the answer is shown: "valid" (a link), "invalid" (struck) or "plain" text.
    citationState(n) {
      if (this.done) {
        return (this.done.sources || []).some((s) => s.n === n) ? "valid" : "invalid";
      }
      if (this.error) return "plain";
      if (this.passages !== null && (n < 1 || n > this.passages)) return "invalid";
      return n < 1 ? "invalid" : "valid";
    }

    // What the done frame's checks ask the reader to verify, in the frame's order (the order
    // of shared/checks.py's registry): [{key, lists, fallback}], worded by wordWarning. No
    // check is named here: a failed one is `checks.<name>` with its block's lists; then weak
    // sources; then each check that could not run ({valid: null, unavailable: true}, a bug
    // inside it on the server: neither passed nor failed) as `checks.<name>.unavailable`.
    warnings() {
      const out = [];
      const checks = (this.done && this.done.checks) || {};
      const blocks = Object.keys(checks).filter((name) => checks[name] &&
        typeof checks[name] === "object").map((name) => [name, checks[name]]);
      for (const [name, block] of blocks) {
        if (block.valid !== false) continue;
        const lists = {};
        for (const field of Object.keys(block)) {
          if (Array.isArray(block[field])) lists[field] = block[field];
        }
        out.push({key: "checks." + name, lists: lists, fallback: "checks.failed"});
      }
      const sources = (this.done && Array.isArray(this.done.sources)) ? this.done.sources : [];
      if (sources.length && sources.every((s) => s.weak === true)) out.push({key: "checks.weak"});
      for (const [name, block] of blocks) {
        if (block.unavailable === true) {
          out.push({key: "checks." + name + ".unavailable", fallback: "checks.unavailable"});
        }
      }
      return out;
    }

    // An unlabelled [a, b, c]: three citations when the server's check read them so (or, before
    // the answer is done, when all are passage numbers), else a fuzzy triple left as text.
    tripleIsCitation(nums) {
      const checked = this.done && this.done.checks && this.done.checks.citations;
      if (checked && Array.isArray(checked.cited)) return nums.every((n) => checked.cited.includes(n));
      return this.passages !== null && nums.every((n) => n >= 1 && n <= this.passages);
    }
  }

  // One warning of TurnState.warnings() as a sentence, from the panel's texts alone
  // (web/static/panel-i18n.js), so a check added to shared/checks.py needs only its wording:
  //   checks.<name>         the sentence; {field} is the block's list of that name ({invalid})
  //   checks.<name>.item    how one item of a list is written ("[{item}]"; else as it is)
  //   checks.<name>.none    said instead when the lists it names are empty (else nothing)
  //   checks.<name>.many    said instead for more than one item
  // has(key): whether the texts hold key; t(key, params): the filled text. Null: nothing to say.
  function wordWarning(w, has, t) {
    let key = has(w.key) ? w.key : w.fallback;
    if (!key) return null;
    const lists = w.lists || {};
    if (key === w.key) {
      const named = Object.keys(lists).filter((f) => t(key, {}).includes("{" + f + "}"));
      const count = named.reduce((n, f) => n + lists[f].length, 0);
      if (named.length && count === 0) {
        if (!has(key + ".none")) return null;
        key += ".none";
      } else if (count > 1 && has(key + ".many")) {
        key += ".many";
      }
    }
    const params = {};
    for (const field of Object.keys(lists)) {
      params[field] = lists[field].map((x) => has(w.key + ".item")
        ? t(w.key + ".item", {item: String(x)}) : String(x)).join(", ");
    }
    return t(key, params);
  }

  return {TurnState: TurnState, CANCELLED: CANCELLED, wordWarning: wordWarning};
});
