// The panel's citation reader (web/static/panel-render.js) against forms the server's check
// reads (worker/pipeline/markers.py); run: node --test tests/js.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");

global.window = {};
require("../../web/static/panel-render.js");
const {stripCitations} = window.BecomeAssistantRender;

test("a space-separated list is a citation, a space-grouped number is not", () => {
  assert.equal(stripCitations("Both [1 2] agree."), "Both agree.");
  assert.equal(stripCitations("See [7 9]."), "See.");
  assert.equal(stripCitations("Both [2  5] hold"), "Both hold");
  assert.equal(stripCitations("A budget of [1 234] CZK."), "A budget of [1 234] CZK.");
  assert.equal(stripCitations("Lists [1, 2] and [Zdroj 2] go"), "Lists and go");
  assert.equal(stripCitations("A triple [6, 8, 11] stays"), "A triple [6, 8, 11] stays");
});

test("a heading keeps underscores inside words; emphasis marks around words go", () => {
  const {plainHeading} = window.BecomeAssistantRender;
  assert.equal(plainHeading("“__Host-access_token vás udržuje přihlášené. Platí 15 minut.”, …"),
    "“__Host-access_token vás udržuje přihlášené. Platí 15 minut.”, …");
  assert.equal(plainHeading("## The **maximum** error and _why_ it_matters"),
    "The maximum error and why it_matters");
  assert.equal(plainHeading("ASSISTANT_RATE_LIMIT_PER_HOUR limits"),
    "ASSISTANT_RATE_LIMIT_PER_HOUR limits");
});
