// One turn's connection (protocol v1): a WebSocket with a ticket, or Server-Sent Events over
// fetch where WebSockets do not get through; when the connection drops before the terminal
// frame, a new connection that resumes after the last seq seen, with back-off. It knows the
// frames' envelope (type, turn, seq) and the client's own frames (ask, resume, cancel), nothing
// of what the frames mean for the answer. Loaded as a plain script
// (window.BecomeAssistantTransport) and, for the node tests in tests/js, as a CommonJS module.
"use strict";

(function (factory) {
  const api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else window.BecomeAssistantTransport = api;
})(function () {
  // The pauses between tries; the last one repeats. A dropped turn is tried for as long as the
  // server keeps its replay log (ASSISTANT_REPLAY_TTL_S, 15 minutes by default), so an outage
  // of minutes still ends with the whole answer; the browser's `online` event and the panel's
  // Reconnect button try at once (retryNow).
  const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];
  const GIVE_UP_MS = 15 * 60 * 1000;
  const CANCELLED = 499;
  const TOO_MANY = 429;
  const OPEN = 1;  // WebSocket.OPEN
  // The server process is stopping (a deploy): resume at once on another one, no back-off.
  // Over WebSockets the close code (1012, "service restart"); over SSE a `reconnect` event.
  const RESTART_CLOSE = 1012;
  // Closed for a restart before the turn's `accepted` frame: the server had not taken the
  // question (it sends a turn's `accepted` before that close), so it is asked again at once on
  // a new connection, at most this many times.
  const MAX_REASKS = 3;

  // The text/event-stream format, fed in pieces as they arrive: calls onEvent({id, event, data})
  // for each complete event; comments (": ...") and keep-alive lines carry nothing.
  class SseParser {
    constructor(onEvent) {
      this.onEvent = onEvent;
      this.buffer = "";
      this.reset();
    }

    reset() {
      this.data = [];
      this.event = "";
      this.id = null;
    }

    push(chunk) {
      this.buffer += chunk;
      let nl;
      while ((nl = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = this.buffer.slice(0, nl);
        const width = this.buffer.startsWith("\r\n", nl) ? 2 : 1;
        // A lone \r at the end may be the first half of \r\n: wait for the next piece.
        if (width === 1 && this.buffer[nl] === "\r" && nl + 1 === this.buffer.length) break;
        this.buffer = this.buffer.slice(nl + width);
        this.line(line);
      }
    }

    line(line) {
      if (line === "") {
        if (this.data.length) {
          this.onEvent({id: this.id, event: this.event || "message", data: this.data.join("\n")});
        }
        this.reset();
        return;
      }
      if (line.startsWith(":")) return;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") this.data.push(value);
      else if (field === "event") this.event = value;
      else if (field === "id") this.id = value;
    }
  }

  // env (what the page provides; tests pass doubles of the browser's APIs):
  //   ticket()              a WebSocket ticket (a promise); a rejection with retryable === false
  //                         ends the turn with its code and message, any other one is a drop
  //   wsUrl(ticket)         the socket's address
  //   WebSocket             the WebSocket constructor (absent: SSE from the start)
  //   fetch, baseUrl,       for SSE: POST {baseUrl}/api/v1/assistant/chat/stream and
  //   token(fresh)          GET .../turns/{turn}/events?after={seq}, with the bearer token
  //   setTimeout            the back-off's timer
  //   now                   the clock of the drop (ms; Date.now when absent)
  //   net                   shared by a panel's turns: {wsWorked, sse}; once one WebSocket
  //                         has opened the page keeps to WebSockets
  // on (what the turn gets):
  //   frame(f)              every frame but pings, after a refused cancel is dropped
  //   reconnecting(since)   the connection dropped at `since` (env.now()); a new one follows
  //                         after a pause
  //   connected()           a new connection after a drop is open (the resume is sent)
  //   failed(f)             an error frame made here: {code, message, retry_after} or
  //                         {code: 0, local: "error.connection" | "error.lost"}; the turn ends.
  //                         Before the turn was accepted every failure ends it (nothing to
  //                         resume): a refusal with its code, a network failure as
  //                         error.connection; only a restart's close asks again first.
  class Transport {
    constructor(env, on) {
      this.env = env;
      this.on = on;
      this.net = env.net || {wsWorked: false, sse: false};
      if (typeof env.WebSocket !== "function") this.net.sse = true;
      this.backoff = env.backoff || BACKOFF_MS;
      this.giveUpMs = env.giveUpMs || GIVE_UP_MS;
      this.now = env.now || (() => Date.now());
      this.droppedAt = null;  // the first drop since the last frame
      this.waiting = false;  // a pause before the next try is running
      this.timerGen = 0;
      this.askFrame = null;
      this.turnId = null;
      this.lastSeq = -1;
      this.tries = 0;
      this.resumes = 0;
      this.reasks = 0;
      this.ws = null;
      this.stream = null;  // the SSE request's AbortController
      this.closed = false;
      this.restartNow = false;
      this.cancelRequested = false;
      this.cancelSent = false;
    }

    get mode() { return this.net.sse ? "sse" : "ws"; }

    start(askFrame) {
      this.askFrame = askFrame;
      this.connect();
    }

    // Carry on with a turn the page had started before a reload: resume after `after`.
    resume(turnId, after) {
      this.turnId = turnId;
      this.lastSeq = after;
      this.resumes++;
      this.connect();
    }

    // Try now instead of after the pause (the browser is online again, or the person asked).
    retryNow() {
      if (this.closed || !this.waiting) return false;
      this.waiting = false;
      this.timerGen++;
      this.resumes++;
      this.connect();
      return true;
    }

    // The first frame of a connection: the question, or after a drop the resume.
    firstFrame() {
      return this.turnId ? {type: "resume", turn: this.turnId, after: this.lastSeq}
        : this.askFrame;
    }

    connect() {
      if (this.net.sse) this.connectSse();
      else this.connectWs();
    }

    async connectWs() {
      let ticket;
      try {
        ticket = await this.env.ticket();
      } catch (err) {
        if (this.closed) return;
        if ((err && err.retryable === false) || !this.turnId) this.on.failed(refusalFrom(err));
        else this.dropped();
        return;
      }
      if (this.closed) return;
      const ws = new this.env.WebSocket(this.env.wsUrl(ticket));
      let opened = false;
      this.ws = ws;
      ws.onopen = () => {
        if (ws !== this.ws) return;
        opened = true;
        this.net.wsWorked = true;
        ws.send(JSON.stringify(this.firstFrame()));
        if (this.turnId && this.on.connected) this.on.connected();
        if (this.cancelRequested && this.turnId) this.sendCancel();
      };
      ws.onmessage = (ev) => {
        if (ws !== this.ws) return;
        let frame;
        try { frame = JSON.parse(ev.data); } catch (err) { return; }
        if (frame && typeof frame === "object") this.receive(frame);
      };
      ws.onclose = (ev) => {
        if (ws !== this.ws) return;
        this.ws = null;
        if (this.closed) return;
        if (ev && ev.code === RESTART_CLOSE) {
          this.dropped(true);
          return;
        }
        if (!opened && !this.net.wsWorked && this.env.fetch) {
          // No WebSocket has got through on this page (a proxy that refuses the upgrade):
          // this and every later connection go over SSE.
          this.net.sse = true;
          this.connectSse();
          return;
        }
        this.dropped();
      };
      ws.onerror = () => {};  // onclose follows and decides
    }

    async connectSse() {
      const ctl = new AbortController();
      this.stream = ctl;
      const first = this.firstFrame();
      let resp;
      try {
        resp = await this.sseRequest(first, ctl, false);
        if (resp.status === 401 && !this.closed) resp = await this.sseRequest(first, ctl, true);
      } catch (err) {
        if (ctl !== this.stream || this.closed) return;
        this.stream = null;
        if ((err && err.retryable === false) || !this.turnId) this.on.failed(refusalFrom(err));
        else this.dropped();
        return;
      }
      if (ctl !== this.stream || this.closed) return;
      if (!resp.ok) {
        this.stream = null;
        const refusal = await refusalOf(resp);
        if (resp.status >= 500 && this.turnId) this.dropped();
        else this.on.failed(refusal);
        return;
      }
      if (first.type === "resume" && this.on.connected) this.on.connected();
      const parser = new SseParser((ev) => {
        if (ctl !== this.stream) return;
        let frame;
        try { frame = JSON.parse(ev.data); } catch (err) { return; }
        if (frame && typeof frame === "object") this.receive(frame);
      });
      try {
        const reader = resp.body.getReader();
        const decoder = new TextDecoder();
        for (;;) {
          const {value, done} = await reader.read();
          if (done || ctl !== this.stream) break;
          parser.push(decoder.decode(value, {stream: true}));
        }
      } catch (err) { /* the stream broke off: as when it ends */ }
      if (ctl !== this.stream || this.closed) return;
      this.stream = null;
      const restart = this.restartNow;
      this.restartNow = false;
      this.dropped(restart);
    }

    async sseRequest(first, ctl, fresh) {
      const token = await this.env.token(fresh);
      const headers = {"Authorization": "Bearer " + token};
      const base = this.env.baseUrl || "";
      if (first.type === "resume") {
        return this.env.fetch(base + "/api/v1/assistant/turns/" + encodeURIComponent(first.turn) +
          "/events?after=" + encodeURIComponent(String(first.after)),
        {headers: headers, signal: ctl.signal, cache: "no-store"});
      }
      const body = Object.assign({}, first);
      delete body.type;
      headers["Content-Type"] = "application/json";
      return this.env.fetch(base + "/api/v1/assistant/chat/stream", {method: "POST",
        headers: headers, body: JSON.stringify(body), signal: ctl.signal, cache: "no-store"});
    }

    receive(f) {
      if (this.closed || f.type === "ping" || f.type === "pong") return;
      if (f.type === "reconnect") {
        this.restartNow = true;  // the stream ends next: resume at once
        return;
      }
      if (typeof f.seq === "number") {
        if (f.seq <= this.lastSeq) return;  // already seen (a resume may repeat frames)
        this.lastSeq = f.seq;
        this.tries = 0;
        this.droppedAt = null;
      }
      if (f.type === "accepted") {
        this.turnId = f.turn;
        if (this.cancelRequested) this.sendCancel();
      }
      // A refusal of a client frame (no seq). A refused cancel means the turn already ended;
      // its terminal frame still comes.
      if (f.type === "error" && (f.seq === null || f.seq === undefined) && this.cancelSent &&
          this.turnId && f.code !== CANCELLED && f.code !== TOO_MANY) return;
      this.on.frame(f);
    }

    // The connection closed before the terminal frame: a new one, resuming after the last seq,
    // after the back-off's pause; at once when the server said it is restarting. Given up only
    // when the drop is older than the server's replay log. Before the turn was accepted only a
    // restart's close is tried again (the ask, MAX_REASKS times); any other drop ends it.
    dropped(restart) {
      if (this.closed) return;
      if (!this.turnId) {
        if (restart && this.reasks < MAX_REASKS) {
          this.reasks++;
          this.connect();  // firstFrame() is the ask again
          return;
        }
        this.on.failed({code: 0, local: "error.connection"});
        return;
      }
      if (this.droppedAt === null) this.droppedAt = this.now();
      if (this.now() - this.droppedAt >= this.giveUpMs) {
        this.on.failed({code: 0, local: "error.lost"});
        return;
      }
      const delay = restart ? 0 : this.backoff[Math.min(this.tries, this.backoff.length - 1)];
      this.tries++;
      this.on.reconnecting(this.droppedAt);
      this.waiting = true;
      const gen = ++this.timerGen;
      this.env.setTimeout(() => {
        if (this.closed || gen !== this.timerGen) return;
        this.waiting = false;
        this.resumes++;
        this.connect();
      }, delay);
    }

    // Stop the answer once the turn id is known: a cancel frame on the socket, or over SSE a
    // POST .../turns/{turn}/cancel. Either way the worker ends the turn with error 499, which
    // comes as the stream's terminal frame.
    cancel() {
      if (this.closed || this.cancelRequested) return;
      this.cancelRequested = true;
      if (!this.turnId) return;  // sent when the accepted frame names the turn
      if (this.net.sse) this.sendCancel();
      else if (this.ws && this.ws.readyState === OPEN) this.sendCancel();
    }

    sendCancel() {
      if (this.cancelSent) return;
      if (this.net.sse) {
        this.cancelSent = true;
        this.postCancel();
        return;
      }
      if (!this.ws) return;
      this.cancelSent = true;
      this.ws.send(JSON.stringify({type: "cancel", turn: this.turnId}));
    }

    async postCancel() {
      const url = (this.env.baseUrl || "") + "/api/v1/assistant/turns/" +
        encodeURIComponent(this.turnId) + "/cancel";
      let resp = null;
      try {
        for (const fresh of [false, true]) {
          const token = await this.env.token(fresh);
          resp = await this.env.fetch(url, {method: "POST", cache: "no-store",
            headers: {"Authorization": "Bearer " + token}});
          if (resp.status !== 401) break;
        }
      } catch (err) { resp = null; }
      if (this.closed) return;
      // Accepted, or 404: the turn had already ended and its terminal frame still comes.
      if (resp && (resp.ok || resp.status === 404)) return;
      // The server could not be told: the turn ends here as stopped (finished unseen).
      this.on.failed({code: CANCELLED, message: ""});
    }

    // What a dropped network connection does (a test hook): the turn resumes. The drop counts
    // at once: offline, the socket's close handshake never completes and its onclose would
    // come only after the browser's handshake timeout (the old socket's handlers ignore it).
    drop() {
      const ws = this.ws;
      if (ws) {
        this.ws = null;
        ws.close();
        this.dropped();
      }
      if (this.stream) {
        const ctl = this.stream;
        this.stream = null;
        ctl.abort();
        this.dropped();
      }
    }

    // The turn has ended: no more frames, no reconnecting.
    close() {
      this.closed = true;
      const ws = this.ws;
      this.ws = null;
      if (ws) ws.close();
      const ctl = this.stream;
      this.stream = null;
      if (ctl) ctl.abort();
    }
  }

  // A failure before the turn was accepted, as an error frame: a refusal's code and message,
  // or a network failure (no code) as the local "could not be reached".
  function refusalFrom(err) {
    if (err && err.code) {
      return {code: err.code, message: err.message || "", retry_after: err.retryAfter};
    }
    return {code: 0, local: "error.connection"};
  }

  // The JSON error of a refused SSE request, as an error frame.
  async function refusalOf(resp) {
    let body = null;
    try { body = await resp.json(); } catch (err) { body = null; }
    const e = body && body.error ? body.error : {};
    return {code: e.code || resp.status, message: e.message || "", retry_after: e.retry_after};
  }

  return {Transport: Transport, SseParser: SseParser, BACKOFF_MS: BACKOFF_MS,
    GIVE_UP_MS: GIVE_UP_MS, RESTART_CLOSE: RESTART_CLOSE};
});
