// The turn's connection (web/static/panel-transport.js) against test doubles of the browser's
// WebSocket and timers, and node's own fetch Response and ReadableStream for SSE.
// Run: node --test tests/js (or npm test --prefix tests/js).
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const {Transport, SseParser, BACKOFF_MS, RESTART_CLOSE} = require("../../web/static/panel-transport.js");

const TURN = "b".repeat(32);
const ASK = {type: "ask", message: "How does the search work?", history: [], project_id: null};

// A double of the browser's WebSocket: the test plays the server. Like the browser, events are
// dispatched asynchronously and close() leads to one onclose.
class FakeSocket {
  constructor(url) {
    this.url = url;
    this.readyState = 0;
    this.sent = [];
    FakeSocket.all.push(this);
  }

  send(data) {
    if (this.readyState !== 1) throw new Error("InvalidStateError: not open");
    this.sent.push(JSON.parse(data));
  }

  close() {
    if (this.readyState >= 2) return;
    this.readyState = 2;
    queueMicrotask(() => this.closed());
  }

  // ---- the server's side ----
  open() {
    this.readyState = 1;
    this.onopen && this.onopen({});
  }

  frame(f) { this.onmessage && this.onmessage({data: typeof f === "string" ? f : JSON.stringify(f)}); }

  closed(code) {
    this.readyState = 3;
    this.onerror && this.onerror({});
    this.onclose && this.onclose({code: code || 1006});
  }

  // The server closes the socket with a code (e.g. 1012 when its process stops).
  closeWith(code) {
    this.readyState = 2;
    queueMicrotask(() => this.closed(code));
  }
}
FakeSocket.OPEN = 1;
FakeSocket.all = [];

// A double of window.setTimeout: the test runs the pending callbacks.
function fakeTimers() {
  const pending = [];
  return {
    pending: pending,
    setTimeout: (fn, ms) => { pending.push({fn, ms}); },
    runNext() { const t = pending.shift(); t.fn(); return t.ms; },
  };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

function setup(extra) {
  FakeSocket.all = [];
  const timers = fakeTimers();
  const got = {frames: [], reconnecting: 0, failed: []};
  let tickets = 0;
  const env = Object.assign({
    ticket: async () => "ticket-" + (++tickets),
    wsUrl: (ticket) => "ws://assistant.test/api/v1/assistant/ws?ticket=" + ticket,
    WebSocket: FakeSocket,
    setTimeout: timers.setTimeout,
    net: {wsWorked: false, sse: false},
  }, extra || {});
  const link = new Transport(env, {
    frame: (f) => got.frames.push(f),
    reconnecting: () => got.reconnecting++,
    failed: (f) => got.failed.push(f),
  });
  return {link, env, timers, got, socket: (i) => FakeSocket.all[i]};
}

const f = (seq, type, fields) => Object.assign({type: type, turn: TURN, seq: seq}, fields || {});

// A turn asked on its socket, opened and accepted by the server.
async function accepted(extra) {
  const t = setup(extra);
  t.link.start(ASK);
  await tick();
  t.socket(0).open();
  t.socket(0).frame(f(0, "accepted"));
  return t;
}

test("the ask goes on the ticketed socket; frames come through once, pings not at all", async () => {
  const {link, got, socket} = setup();
  link.start(ASK);
  await tick();
  const ws = socket(0);
  assert.equal(ws.url, "ws://assistant.test/api/v1/assistant/ws?ticket=ticket-1");
  ws.open();
  assert.deepEqual(ws.sent, [ASK]);
  ws.frame(f(0, "accepted"));
  ws.frame({type: "ping"});
  ws.frame(f(1, "token", {text: "a"}));
  ws.frame(f(1, "token", {text: "a"}));
  ws.frame("not json");
  ws.frame(f(2, "token", {text: "b"}));
  assert.deepEqual(got.frames.map((x) => x.seq), [0, 1, 2]);
  assert.equal(link.turnId, TURN);
  assert.equal(link.lastSeq, 2);
});

test("a drop resumes on a new ticket after the last seq, with back-off", async () => {
  const {link, env, got, timers, socket} = setup();
  link.start(ASK);
  await tick();
  socket(0).open();
  assert.equal(env.net.wsWorked, true, "from now on a failed socket is a drop, not SSE");
  for (const x of [f(0, "accepted"), f(1, "token", {text: "x"}), f(2, "token", {text: "y"})]) {
    socket(0).frame(x);
  }
  link.drop();
  await tick();
  assert.equal(got.reconnecting, 1);
  assert.equal(timers.runNext(), BACKOFF_MS[0]);
  assert.equal(link.resumes, 1);
  await tick();
  const ws = socket(1);
  assert.match(ws.url, /ticket=ticket-2$/);
  ws.open();
  assert.deepEqual(ws.sent, [{type: "resume", turn: TURN, after: 2}]);
  // The resumed stream may repeat what was seen: only new seqs come through.
  ws.frame(f(2, "token", {text: "y"}));
  ws.frame(f(3, "done", {answer: "xy"}));
  assert.deepEqual(got.frames.map((x) => x.seq), [0, 1, 2, 3]);
  assert.equal(got.failed.length, 0);
});

test("a drop is a drop at once, even when the close handshake never completes (offline)", async () => {
  const {link, got, timers, socket} = await accepted();
  // Offline, the server's closing frame never arrives: the browser fires onclose only after
  // its closing-handshake timeout, so the socket's close() leads to no onclose here.
  socket(0).close = function () { this.readyState = 2; };
  link.drop();
  await tick();
  assert.equal(got.reconnecting, 1, "the drop is reported without waiting for onclose");
  assert.equal(timers.pending.length, 1, "one resume is scheduled");
  // A late onclose of the dropped socket (the handshake's timeout) changes nothing.
  socket(0).closed();
  await tick();
  assert.equal(got.reconnecting, 1);
  assert.equal(timers.pending.length, 1);
});

test("a server restart (close 1012) resumes at once, without the back-off", async () => {
  const {link, got, timers, socket} = await accepted();
  socket(0).frame(f(1, "token", {text: "x"}));
  socket(0).closeWith(RESTART_CLOSE);
  await tick();
  assert.equal(RESTART_CLOSE, 1012);
  assert.equal(got.reconnecting, 1);
  assert.equal(timers.runNext(), 0, "no pause before the new connection");
  await tick();
  socket(1).open();
  assert.deepEqual(socket(1).sent, [{type: "resume", turn: TURN, after: 1}]);
  // Any other close code is a drop, with the back-off's pause.
  socket(1).closeWith(1011);
  await tick();
  assert.equal(timers.runNext(), BACKOFF_MS[1]);
  assert.equal(got.failed.length, 0);
});

test("drops go on being tried while the replay log lives; a new frame resets the pause",
  async () => {
    let clock = 0;
    const {link, got, timers, socket} = await accepted({now: () => clock, giveUpMs: 60000});
    const delays = [];
    let n = 0;
    for (;;) {
      socket(n).close();
      await tick();
      if (got.failed.length) break;
      const ms = timers.runNext();
      delays.push(ms);
      clock += ms;
      await tick();
      n++;
      socket(n).open();
      if (n === 2) socket(n).frame(f(1, "token", {text: "progress"}));
    }
    // Two pauses before the progress (then back to the first), the last pause repeating, and
    // the end only once the drop is older than the log (60 s here, 15 minutes by default).
    assert.deepEqual(delays.slice(0, 8), [500, 1000, 500, 1000, 2000, 4000, 8000, 15000]);
    assert.ok(delays.slice(8).every((ms) => ms === 15000), delays);
    assert.ok(clock - 1500 >= 60000 && clock - 1500 < 60000 + 15000, String(clock));
    assert.deepEqual(got.failed, [{code: 0, local: "error.lost"}]);
    assert.equal(BACKOFF_MS[BACKOFF_MS.length - 1], 15000);
  });

test("retryNow skips the pause once; a reload's turn resumes after its last seq", async () => {
  const {link, got, timers, socket} = setup();
  const connected = [];
  link.on.connected = () => connected.push(link.lastSeq);
  link.start(ASK);
  await tick();
  socket(0).open();
  socket(0).frame(f(0, "accepted"));
  socket(0).frame(f(1, "token", {text: "a"}));
  assert.equal(link.retryNow(), false, "nothing to skip while connected");
  socket(0).close();
  await tick();
  assert.equal(got.reconnecting, 1);
  assert.equal(link.retryNow(), true);
  await tick();
  socket(1).open();
  assert.deepEqual(socket(1).sent, [{type: "resume", turn: TURN, after: 1}]);
  assert.deepEqual(connected, [1]);
  // The pause that was skipped does nothing when its timer fires.
  timers.runNext();
  await tick();
  assert.equal(FakeSocket.all.length, 2);

  const reloaded = setup();
  reloaded.link.resume(TURN, 7);
  await tick();
  reloaded.socket(0).open();
  assert.deepEqual(reloaded.socket(0).sent, [{type: "resume", turn: TURN, after: 7}]);
  reloaded.socket(0).frame(f(7, "token", {text: "seen"}));
  reloaded.socket(0).frame(f(8, "token", {text: "new"}));
  assert.deepEqual(reloaded.got.frames.map((x) => x.seq), [8]);
});

test("a drop before the turn was accepted ends it as a connection error", async () => {
  const {link, got, timers, socket} = setup();
  link.start(ASK);
  await tick();
  socket(0).open();
  socket(0).close();
  await tick();
  assert.deepEqual(got.failed, [{code: 0, local: "error.connection"}]);
  assert.equal(timers.pending.length, 0);
});

test("a restart's close (1012) before the turn was accepted asks again at once, a few times",
  async () => {
    // The server sends a turn's accepted frame before it closes with 1012 (web/routes/ws.py),
    // so a 1012 without one means the question was never taken: asked again, not failed.
    const {link, got, timers, socket} = setup();
    link.start(ASK);
    await tick();
    socket(0).open();
    socket(0).closeWith(RESTART_CLOSE);
    await tick();
    await tick();
    assert.deepEqual(got.failed, []);
    assert.equal(timers.pending.length, 0, "no pause");
    assert.equal(got.reconnecting, 0, "nothing was shown as running yet");
    socket(1).open();
    assert.deepEqual(socket(1).sent, [ASK]);
    socket(1).frame(f(0, "accepted"));
    socket(1).frame(f(1, "done", {answer: "x"}));
    assert.deepEqual(got.frames.map((x) => x.seq), [0, 1]);
    // A server that keeps closing before accepting: the turn fails after a few asks.
    const again = setup();
    again.link.start(ASK);
    for (let i = 0; ; i++) {
      await tick();
      await tick();
      if (again.got.failed.length) break;
      assert.ok(i < 10, "gives up");
      again.socket(i).open();
      assert.deepEqual(again.socket(i).sent, [ASK]);
      again.socket(i).closeWith(RESTART_CLOSE);
    }
    assert.deepEqual(again.got.failed, [{code: 0, local: "error.connection"}]);
    assert.equal(FakeSocket.all.length, 4, "the ask and three more");
  });

test("a refused ticket ends the turn with its reason; a failed one is a drop", async () => {
  const refusal = Object.assign(new Error("Please wait."), {code: 429, retryAfter: 12,
    retryable: false});
  const refused = setup({ticket: async () => { throw refusal; }});
  refused.link.start(ASK);
  await tick();
  assert.deepEqual(refused.got.failed, [{code: 429, message: "Please wait.", retry_after: 12}]);

  const offline = setup({ticket: async () => { throw new TypeError("Failed to fetch"); }});
  offline.link.start(ASK);
  await tick();
  assert.deepEqual(offline.got.failed, [{code: 0, local: "error.connection"}]);
});

test("stop: the cancel waits for the turn id, goes once, and a refused cancel is dropped",
  async () => {
    const {link, got, socket} = setup();
    link.start(ASK);
    await tick();
    const ws = socket(0);
    ws.open();
    link.cancel();
    assert.deepEqual(ws.sent, [ASK], "no turn id yet: nothing to cancel");
    ws.frame(f(0, "accepted"));
    assert.deepEqual(ws.sent, [ASK, {type: "cancel", turn: TURN}]);
    link.cancel();
    assert.equal(ws.sent.length, 2);
    // The turn had already ended: the cancel is refused, the terminal frame still comes.
    ws.frame({type: "error", seq: null, code: 400, message: "The turn has ended."});
    ws.frame(f(1, "done", {answer: "Complete."}));
    assert.deepEqual(got.frames.map((x) => x.type), ["accepted", "done"]);
  });

test("a stop during a reconnect goes with the resume; the stop's own error comes through",
  async () => {
    const {link, got, timers, socket} = setup();
    link.start(ASK);
    await tick();
    socket(0).open();
    socket(0).frame(f(0, "accepted"));
    socket(0).close();
    await tick();
    link.cancel();
    timers.runNext();
    await tick();
    socket(1).open();
    assert.deepEqual(socket(1).sent, [{type: "resume", turn: TURN, after: 0},
      {type: "cancel", turn: TURN}]);
    socket(1).frame({type: "error", seq: null, code: 499, message: "Stopped."});
    assert.equal(got.frames[got.frames.length - 1].code, 499);
  });

test("after close no frame comes through and nothing reconnects", async () => {
  const {link, got, timers, socket} = setup();
  link.start(ASK);
  await tick();
  const ws = socket(0);
  ws.open();
  ws.frame(f(0, "accepted"));
  link.close();
  assert.equal(ws.readyState, 2);
  ws.frame(f(1, "token", {text: "late"}));
  await tick();
  assert.equal(got.frames.length, 1);
  assert.equal(got.reconnecting, 0);
  assert.equal(timers.pending.length, 0);
});

// ---- SSE ----------------------------------------------------------------------------------

// A fetch double that answers with node's real Response; each stream is fed by the test.
function fakeFetch() {
  const calls = [];
  const fetch = async (url, init) => {
    const call = {url, init, controller: null};
    calls.push(call);
    if (call.reply) return call.reply;
    const body = new ReadableStream({start(c) { call.controller = c; }});
    if (init.signal) init.signal.addEventListener("abort", () => {
      call.aborted = true;
      try { call.controller.error(new Error("aborted")); } catch (err) { /* ended */ }
    });
    return new Response(body, {status: 200, headers: {"Content-Type": "text/event-stream"}});
  };
  const enc = new TextEncoder();
  const send = (call, text) => call.controller.enqueue(enc.encode(text));
  const event = (x) => (x.seq !== undefined && x.seq !== null ? "id: " + x.seq + "\n" : "") +
    "event: " + x.type + "\ndata: " + JSON.stringify(x) + "\n\n";
  return {fetch, calls, send, event};
}

test("an SSE reconnect event (the server is stopping) resumes at once", async () => {
  const http = fakeFetch();
  const {link, got, timers} = setup({fetch: http.fetch, baseUrl: "https://a.test",
    token: async () => "tok", net: {wsWorked: false, sse: true}});
  link.start(ASK);
  await tick();
  const first = http.calls[0];
  await tick();
  http.send(first, http.event(f(0, "accepted")) + http.event(f(1, "token", {text: "a"})) +
    http.event({type: "reconnect"}));
  await tick();
  first.controller.close();
  await tick();
  await tick();
  assert.deepEqual(got.frames.map((x) => x.seq), [0, 1], "the reconnect event is no frame");
  assert.equal(got.reconnecting, 1);
  assert.equal(timers.runNext(), 0);
  await tick();
  assert.equal(http.calls[1].url,
    "https://a.test/api/v1/assistant/turns/" + TURN + "/events?after=1");
  // A stream that merely ends is a drop with the back-off's pause.
  await tick();
  http.calls[1].controller.close();
  await tick();
  await tick();
  assert.equal(timers.runNext(), BACKOFF_MS[1]);
  link.close();
});

test("no WebSocket getting through: SSE carries the ask and resumes after the last seq",
  async () => {
    const http = fakeFetch();
    const net = {wsWorked: false, sse: false};
    const tokens = [];
    const {link, got, timers, socket} = setup({fetch: http.fetch, baseUrl: "https://a.test",
      token: async (fresh) => { tokens.push(fresh); return "tok"; }, net: net});
    link.start(ASK);
    await tick();
    socket(0).close();  // the upgrade refused: never opened
    await tick();
    assert.equal(link.mode, "sse");
    const first = http.calls[0];
    assert.equal(first.url, "https://a.test/api/v1/assistant/chat/stream");
    assert.equal(first.init.method, "POST");
    assert.equal(first.init.headers.Authorization, "Bearer tok");
    assert.deepEqual(JSON.parse(first.init.body),
      {message: ASK.message, history: [], project_id: null});
    await tick();
    // An event split across reads, a comment and a ping.
    const accepted = http.event(f(0, "accepted"));
    http.send(first, ": stream open\n\n" + accepted.slice(0, 9));
    http.send(first, accepted.slice(9) + http.event({type: "ping"}));
    http.send(first, http.event(f(1, "token", {text: "Hel"})));
    await tick();
    assert.deepEqual(got.frames.map((x) => x.seq), [0, 1]);
    first.controller.close();  // the stream ends before the terminal frame
    await tick();
    await tick();
    assert.equal(got.reconnecting, 1);
    timers.runNext();
    await tick();
    const again = http.calls[1];
    assert.equal(again.url, "https://a.test/api/v1/assistant/turns/" + TURN + "/events?after=1");
    assert.equal(again.init.method, undefined);
    await tick();
    http.send(again, http.event(f(1, "token", {text: "Hel"})) +
      http.event(f(2, "token", {text: "lo"})) + http.event(f(3, "done", {answer: "Hello"})));
    await tick();
    assert.deepEqual(got.frames.map((x) => x.seq), [0, 1, 2, 3]);
    link.close();
    assert.equal(again.aborted, true);
    assert.deepEqual(tokens, [false, false]);
    assert.equal(net.sse, true, "the page's later turns go over SSE from the start");
    assert.equal(FakeSocket.all.length, 1);
  });

test("once a WebSocket has opened on the page, a failed one is a drop, not SSE", async () => {
  const http = fakeFetch();
  const net = {wsWorked: true, sse: false};
  const {link, got, socket} = setup({fetch: http.fetch, token: async () => "tok", net: net});
  link.start(ASK);
  await tick();
  socket(0).close();
  await tick();
  assert.equal(http.calls.length, 0);
  assert.equal(link.mode, "ws");
  assert.deepEqual(got.failed, [{code: 0, local: "error.connection"}]);
});

test("without WebSocket at all SSE is used; a refusal ends the turn; a stop posts a cancel",
  async () => {
    const http = fakeFetch();
    const refused = setup({WebSocket: undefined, fetch: http.fetch, token: async () => "tok"});
    http.calls.length = 0;
    const reply = new Response(JSON.stringify({error: {code: 429, message: "Please wait.",
      retry_after: 30}}), {status: 429, headers: {"Content-Type": "application/json"}});
    refused.env.fetch = async (url, init) => { http.calls.push({url, init}); return reply; };
    refused.link.start(ASK);
    await tick();
    await tick();
    assert.equal(http.calls.length, 1);
    assert.deepEqual(refused.got.failed, [{code: 429, message: "Please wait.", retry_after: 30}]);

    const http2 = fakeFetch();
    const stopped = setup({WebSocket: undefined, fetch: http2.fetch, token: async () => "tok"});
    stopped.link.start(ASK);
    await tick();
    await tick();
    http2.send(http2.calls[0], http2.event(f(0, "accepted")));
    await tick();
    stopped.link.cancel();
    stopped.link.cancel();
    await tick();
    assert.equal(http2.calls.length, 2, "one cancel request, however often Stop is pressed");
    const post = http2.calls[1];
    assert.equal(post.url, "/api/v1/assistant/turns/" + TURN + "/cancel");
    assert.equal(post.init.method, "POST");
    assert.equal(post.init.headers.Authorization, "Bearer tok");
    assert.deepEqual(stopped.got.failed, [], "the stream stays open for the worker's 499");
    http2.send(http2.calls[0], http2.event(f(1, "error", {code: 499, message: "Stopped."})));
    await tick();
    assert.deepEqual(stopped.got.frames.map((x) => [x.type, x.code]),
      [["accepted", undefined], ["error", 499]]);
    stopped.link.close();
    assert.equal(http2.calls[0].aborted, true);

    // Stop before the turn id is known: the cancel goes when the accepted frame names it.
    const http3 = fakeFetch();
    const early = setup({WebSocket: undefined, fetch: http3.fetch, token: async () => "tok"});
    early.link.start(ASK);
    await tick();
    early.link.cancel();
    await tick();
    assert.equal(http3.calls.length, 1);
    http3.send(http3.calls[0], http3.event(f(0, "accepted")));
    await tick();
    await tick();
    assert.equal(http3.calls.length, 2);
    assert.match(http3.calls[1].url, /\/cancel$/);
    early.link.close();

    // The server cannot be told (the request fails): the turn ends here as stopped.
    const failing = setup({WebSocket: undefined, token: async () => "tok",
      fetch: async (url, init) => {
        if (url.endsWith("/cancel")) throw new TypeError("network");
        return http3.fetch(url, init);
      }});
    failing.link.start(ASK);
    await tick();
    await tick();
    http3.send(http3.calls[2], http3.event(f(0, "accepted")));
    await tick();
    failing.link.cancel();
    await tick();
    await tick();
    assert.deepEqual(failing.got.failed, [{code: 499, message: ""}]);
    failing.link.close();
  });

test("an expired token is asked for afresh once on SSE", async () => {
  const calls = [];
  const tokens = [];
  const {link, got} = setup({WebSocket: undefined, token: async (fresh) => {
    tokens.push(fresh);
    return fresh ? "new" : "old";
  }, fetch: async (url, init) => {
    calls.push(init.headers.Authorization);
    return new Response("{}", {status: init.headers.Authorization === "Bearer old" ? 401 : 503});
  }});
  link.start(ASK);
  for (let i = 0; i < 5; i++) await tick();
  assert.deepEqual(tokens, [false, true]);
  assert.deepEqual(calls, ["Bearer old", "Bearer new"]);
  assert.deepEqual(got.failed, [{code: 503, message: "", retry_after: undefined}]);
});

test("the SSE parser reads CRLF, multi-line data, comments and pieces cut anywhere", () => {
  const events = [];
  const p = new SseParser((e) => events.push(e));
  const text = ": hello\r\nid: 4\r\nevent: token\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n" +
    "data: plain\n\nevent: empty\n\n";
  for (const ch of text) p.push(ch);
  assert.deepEqual(events, [{id: "4", event: "token", data: "{\"a\":\n1}"},
    {id: null, event: "message", data: "plain"}]);
});
