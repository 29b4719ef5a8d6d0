-- :AgentContext as a text bar: the pure layout from plain data, then the float in a real
-- session with a compaction.
local h = require("helpers")
local bar = require("agentls.context_bar")

local report = {
  contextWindow = 128000,
  totalTokens = 20000,
  fill = 20000 / 128000,
  estimated = true,
  -- What the server sends for 0.85 × (128,000 − 4,096).
  thresholdTokens = 105318,
  autoCompact = true,
  sections = {
    { name = "tools", tokens = 3000, trust = "trusted" },
    { name = "system", tokens = 2000, trust = "trusted" },
    { name = "developerInstructions", tokens = 0, trust = "trusted" },
    { name = "agentsMd", tokens = 500, trust = "trusted" },
    { name = "skills", tokens = 100, trust = "trusted" },
    { name = "conversation", tokens = 9000, trust = "trusted" },
    { name = "toolOutputs", tokens = 4000, trust = "untrusted" },
    { name = "environment", tokens = 100, trust = "untrusted" },
    { name = "editor", tokens = 1300, trust = "untrusted" },
  },
}

test("context bar: the window as one bar by section, the threshold, the compactions", function()
  h.assert_eq(bar.lines(report, { { tokensBefore = 90000, tokensAfter = 30000, strategy = "summary" } }, { width = 50 }), {
    "20,000 of 128,000 tokens (16%), estimated",
    "[TSAKHHHHOONE······································]",
    "                                         ^ compaction at 105,318",
    "",
    "T tools                     3,000   2.3%  trusted",
    "S system                    2,000   1.6%  trusted",
    "A AGENTS.md                   500   0.4%  trusted",
    "K skills                      100   0.1%  trusted",
    "H history                   9,000   7.0%  trusted",
    "O tool outputs              4,000   3.1%  untrusted",
    "N environment                 100   0.1%  untrusted",
    "E editor                    1,300   1.0%  untrusted",
    "",
    "85,318 tokens of headroom before compaction",
    "Compactions:",
    "  1. 90,000 → 30,000 tokens (summary)",
  })
end)

test("context bar: past the threshold; new sections; a full bar", function()
  local full = {
    contextWindow = 1000,
    totalTokens = 1000,
    fill = 1,
    thresholdTokens = 637,
    sections = {
      { name = "tools", tokens = 1, trust = "trusted" },
      { name = "conversation", tokens = 998, trust = "trusted" },
      { name = "reminders", tokens = 1, trust = "trusted" },
      { name = "tally", tokens = 0, trust = "trusted" },
    },
  }
  local lines = bar.lines(full, {}, { width = 10 })
  h.assert_eq(lines[2], "[THHHHHHHHR]", "every section keeps a cell, the bar keeps its width")
  h.assert_eq(lines[#lines - 1], "363 tokens past the threshold: the next call compacts first")
  h.assert_eq(lines[#lines], "No compaction so far.")
  local odd = { contextWindow = 100, totalTokens = 2, fill = 0.02, thresholdTokens = 64, sections = { { name = "tools", tokens = 1 }, { name = "tally", tokens = 1 } } }
  assert(bar.lines(odd, {}, { width = 10 })[2]:match("^%[TA"), "a new section gets the first free letter of its name")
  h.assert_eq(bar.compactions_of({ { kind = "user", text = "x" }, { kind = "compaction", tokensBefore = 9, tokensAfter = 3, strategy = "trim" } }), { { tokensBefore = 9, tokensAfter = 3, strategy = "trim" } })
  h.assert_eq(bar.thousands(1234567), "1,234,567")
  h.assert_eq(bar.thousands(-4682), "-4,682")
end)

test(":AgentContext draws the bar, the headroom and the compaction of the session", function()
  local ws = h.workspace({ ["src/lib.rs"] = "pub fn answer() -> u32 {\n    41\n}\n" })
  local url = h.fake({
    replies = { { text = { "First answer." }, usage = { 1000, 10 } } },
    routes = { ["CONTEXT CHECKPOINT COMPACTION"] = { { text = { "[Done] first question answered" } } } },
  })
  h.setup(ws, url, { provider = { contextWindow = 32000 }, compaction = { threshold = 0.5 } })
  vim.cmd.edit(ws .. "/src/lib.rs")
  vim.cmd("AgentChat")
  require("agentls.chat").send("First question.")
  h.wait_transcript("First answer.")
  vim.cmd("AgentCompact")
  h.wait_transcript("> ⟳ compacted:")
  local before, after, strategy = h.transcript():match("> ⟳ compacted: (%d+) → (%d+) tokens %((%w+)%)")
  local buf = require("agentls.commands").context()
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  local text = table.concat(lines, "\n")
  assert(lines[1]:match("^[%d,]+ of 32,000 tokens %(%d+%%%), estimated$"), text)
  assert(lines[2]:match("^%[T+S+[A-Z]*H+[A-Z]*") and lines[2]:find("··%]$"), "a bar of tools, system, history, then free space: " .. text)
  h.assert_eq(vim.fn.strchars(lines[2]), 52, "the bar is 50 cells")
  -- the server's threshold: 0.5 of (32,000 − 4,096)
  assert(lines[3]:match("^ +%^ compaction at 13,952$"), text)
  assert(text:find("\nH history ", 1, true) and text:find("\nE editor ", 1, true), text)
  assert(text:find("untrusted", 1, true), text)
  assert(text:match("\n[%d,]+ tokens of headroom before compaction\n"), text)
  assert(text:find(string.format("  1. %s → %s tokens (%s)", bar.thousands(tonumber(before)), bar.thousands(tonumber(after)), strategy), 1, true), text)
end)
