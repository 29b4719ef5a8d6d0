-- The picture of the context window in :AgentContext, as text: one stacked bar of the window
-- by section (agent/session/context), a legend with tokens and trust, the headroom to the
-- compaction threshold and the compactions so far (the `compaction` items of
-- agent/session/load). Pure: plain data in, lines out (tests/context_bar_spec.lua).

local M = {}

--- Per known section: its key on the bar and how it is called.
local known = {
  tools = { "T", "tools" },
  mcpTools = { "M", "MCP tools" },
  system = { "S", "system" },
  developerInstructions = { "D", "developer instructions" },
  agentsMd = { "A", "AGENTS.md" },
  skills = { "K", "skills" },
  conversation = { "H", "history" },
  toolOutputs = { "O", "tool outputs" },
  environment = { "N", "environment" },
  editor = { "E", "editor" },
  reminders = { "R", "reminders" },
  repoMap = { "P", "repository map" },
}

M.FREE = "·"

--- `1234567` → "1,234,567".
function M.thousands(n)
  local s = tostring(math.floor((n or 0) + 0.5))
  local sign, digits = s:match("^(-?)(%d+)$")
  if not digits then
    return s
  end
  return sign .. digits:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
end

--- The compactions of a transcript (agent/session/load items), oldest first.
function M.compactions_of(items)
  local out = {}
  for _, item in ipairs(items or {}) do
    if item.kind == "compaction" then
      table.insert(out, { tokensBefore = item.tokensBefore, tokensAfter = item.tokensAfter, strategy = item.strategy })
    end
  end
  return out
end

--- The sections with tokens, with their keys, labels and cells on a bar of `width`.
function M.layout(report, width)
  local window = math.max(report.contextWindow or 1, 1)
  local used_keys, segments = {}, {}
  for _, section in ipairs(report.sections or {}) do
    if (section.tokens or 0) > 0 then
      local entry = known[section.name]
      local key, label = entry and entry[1], entry and entry[2] or section.name
      if not key or used_keys[key] then
        key = nil
        for c in (section.name:upper() .. "#"):gmatch(".") do
          if c:match("[A-Z#]") and not used_keys[c] then
            key = c
            break
          end
        end
        key = key or "#"
      end
      used_keys[key] = true
      local cells = math.max(1, math.floor(section.tokens / window * width + 0.5))
      table.insert(segments, { name = section.name, key = key, label = label, tokens = section.tokens, trust = section.trust, cells = cells })
    end
  end
  -- Small sections got a cell they had not earned: take the excess from the largest.
  local total = 0
  for _, s in ipairs(segments) do
    total = total + s.cells
  end
  while total > width do
    table.sort(segments, function(a, b)
      return a.cells > b.cells
    end)
    segments[1].cells = segments[1].cells - 1
    total = total - 1
  end
  return segments
end

--- The lines of the view; `opts`: { width = cells of the bar }.
function M.lines(report, compactions, opts)
  opts = opts or {}
  local width = opts.width or 50
  local window = math.max(report.contextWindow or 1, 1)
  local segments = M.layout(report, width)
  local ordered = {}
  for _, section in ipairs(report.sections or {}) do
    for _, s in ipairs(segments) do
      if s.name == section.name then
        table.insert(ordered, s)
      end
    end
  end
  local bar, used = {}, 0
  for _, s in ipairs(ordered) do
    table.insert(bar, string.rep(s.key, s.cells))
    used = used + s.cells
  end
  table.insert(bar, string.rep(M.FREE, width - used))
  -- The server's figure: the turn compares the same request size with the same limit.
  local limit = report.thresholdTokens or 0
  local at = math.min(math.floor(limit / window * width + 0.5), width)
  local lines = {
    string.format(
      "%s of %s tokens (%d%%)%s",
      M.thousands(report.totalTokens),
      M.thousands(report.contextWindow),
      math.floor((report.fill or 0) * 100 + 0.5),
      report.estimated and ", estimated" or ""
    ),
    "[" .. table.concat(bar) .. "]",
    string.rep(" ", at) .. "^ compaction at " .. M.thousands(limit),
    "",
  }
  for _, s in ipairs(ordered) do
    table.insert(lines, string.format("%s %-22s %8s %5.1f%%  %s", s.key, s.label, M.thousands(s.tokens), s.tokens / window * 100, s.trust or ""))
  end
  table.insert(lines, "")
  local headroom = limit - (report.totalTokens or 0)
  if headroom >= 0 then
    table.insert(lines, string.format("%s tokens of headroom before compaction", M.thousands(headroom)))
  else
    table.insert(lines, string.format("%s tokens past the threshold: the next call compacts first", M.thousands(-headroom)))
  end
  if #(compactions or {}) == 0 then
    table.insert(lines, "No compaction so far.")
  else
    table.insert(lines, "Compactions:")
    for i, c in ipairs(compactions) do
      table.insert(lines, string.format("  %d. %s → %s tokens (%s)", i, M.thousands(c.tokensBefore), M.thousands(c.tokensAfter), c.strategy or "?"))
    end
  end
  return lines
end

return M
