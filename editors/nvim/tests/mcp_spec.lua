-- The MCP servers' state in Neovim: :checkhealth agentls, :AgentMcp and the failure notice,
-- against the real binary, a server whose command does not exist and the REAL reference
-- server @modelcontextprotocol/server-everything (installed by scripts/mcp-servers into a
-- cache; AGENTLS_MCP_EVERYTHING when ./test exported it).
local h = require("helpers")

local here = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")

local everything_path
local function everything()
  if everything_path then
    return everything_path
  end
  everything_path = os.getenv("AGENTLS_MCP_EVERYTHING")
  if not everything_path or everything_path == "" then
    local script = vim.fn.fnamemodify(here .. "/../../../scripts/mcp-servers", ":p")
    local out = vim.system({ script }, { text = true }):wait()
    assert(out.code == 0, "scripts/mcp-servers failed: " .. (out.stderr or ""))
    everything_path = out.stdout:match("export AGENTLS_MCP_EVERYTHING=([^\n]+)")
    assert(everything_path, "AGENTLS_MCP_EVERYTHING in the script's output: " .. out.stdout)
  end
  return everything_path
end

--- The last pushed status's state of `name` (nil before it is listed).
local function pushed_state(name)
  for _, status in pairs(require("agentls.mcp").by_client) do
    for _, server in ipairs(status.servers or {}) do
      if server.name == name then
        return server.state
      end
    end
  end
end

--- Runs `body(notices)` with vim.notify recording its calls into `notices` (shown nowhere);
--- vim.notify is put back even when the body fails.
local function with_notices(body)
  local notices = {}
  local original = vim.notify
  vim.notify = function(message, level)
    table.insert(notices, { message = message, level = level })
  end
  local ok, err = xpcall(body, debug.traceback, notices)
  vim.notify = original
  if not ok then
    error(err, 0)
  end
end

--- Runs :checkhealth agentls and returns its buffer's lines (its tab closed after).
local function checkhealth()
  vim.cmd("checkhealth agentls")
  local lines = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  vim.cmd("tabclose")
  return lines
end

--- The line holding `text` (plain), or an error showing all of them.
local function line_with(lines, text)
  for _, line in ipairs(lines) do
    if line:find(text, 1, true) then
      return line
    end
  end
  error("no line with " .. vim.inspect(text) .. " in:\n" .. table.concat(lines, "\n"), 2)
end

test("checkhealth shows a ready MCP server as OK with its tools and a failed one as an error", function()
  local ws = h.workspace({ ["src/lib.rs"] = "fn main() {}\n" })
  local url = h.fake({ replies = {} })
  require("agentls.mcp").by_client = {} -- nothing an earlier test's client pushed
  with_notices(function(notices)
    h.setup(ws, url, {
      settings = {
        mcpServers = {
          everything = { command = everything(), args = { "stdio" } },
          missing = { command = "/nonexistent/mcp-server" },
          off = { command = "x", enabled = false },
        },
      },
    })
    -- The servers start with the first session; their state is pushed as it changes.
    assert(require("agentls").session(), "a session")
    h.wait(function()
      return pushed_state("everything") == "ready" and pushed_state("missing") == "failed"
    end, "the pushed status: " .. vim.inspect(require("agentls.mcp").by_client))
    local lines = checkhealth()
    local ready = line_with(lines, "everything: ready, ")
    assert(ready:find("OK", 1, true), ready)
    local tools = tonumber(ready:match("ready, (%d+) tools"))
    assert(tools and tools >= 10, ready)
    local failed = line_with(lines, "missing: failed: cannot start `/nonexistent/mcp-server`")
    assert(failed:find("ERROR", 1, true), failed)
    local off = line_with(lines, "off: disabled")
    assert(off:find("WARNING", 1, true), off)

    -- :AgentMcp shows the same list in a float.
    vim.cmd("AgentMcp")
    local float = vim.api.nvim_get_current_win()
    assert(vim.api.nvim_win_get_config(float).relative ~= "", "a floating window")
    local shown = vim.api.nvim_buf_get_lines(0, 0, -1, false)
    h.assert_eq(#shown, 3, "one line per server: " .. table.concat(shown, "\n"))
    assert(line_with(shown, "everything: ready, " .. tools .. " tools"):find("^✓"), vim.inspect(shown))
    assert(line_with(shown, "missing: failed: cannot start"):find("^✗"), vim.inspect(shown))
    vim.cmd("close")

    -- One notice for the failure, none for the others.
    local about_missing = vim.tbl_filter(function(n)
      return n.message:find("MCP server missing failed", 1, true) ~= nil
    end, notices)
    h.assert_eq(#about_missing, 1, "one notice for the failed server: " .. vim.inspect(notices))
    h.assert_eq(about_missing[1].level, vim.log.levels.ERROR)
    h.assert_eq(#notices, 1, "no other notice: " .. vim.inspect(notices))

    -- Another server fails later: the status pushed again still lists the first failure,
    -- which is not announced twice; the new one is, once.
    require("agentls").setup(vim.tbl_deep_extend("force", require("agentls").config, {
      settings = { mcpServers = { later = { command = "/nonexistent/later" } } },
    }))
    vim.cmd("AgentNew")
    h.wait(function()
      return pushed_state("later") == "failed"
    end, "the later server failed: " .. vim.inspect(require("agentls.mcp").by_client))
    h.assert_eq(#notices, 2, "one notice per failure: " .. vim.inspect(notices))
    assert(notices[2].message:find("MCP server later failed", 1, true), vim.inspect(notices))
  end)
end)

test("checkhealth says when no agentls runs and when no MCP server is configured", function()
  local ws = h.workspace({ ["src/lib.rs"] = "fn main() {}\n" })
  local url = h.fake({ replies = {} })
  h.setup(ws, url)
  local lines = checkhealth()
  line_with(lines, "no agentls server running: the MCP servers' state is shown once one runs")
  assert(require("agentls").session(), "a session")
  lines = checkhealth()
  local none = line_with(lines, "no MCP servers: none configured")
  assert(not none:find("ERROR", 1, true) and not none:find("WARNING", 1, true), none)
end)
