-- Shared by the specs: a workspace, the fake provider as a process, setup, waiting.
local M = {}

local providers = {}

--- A temporary workspace with `files` ({path = text}); returns its absolute path.
function M.workspace(files)
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir .. "/.git", "p")
  for path, text in pairs(files or {}) do
    vim.fn.mkdir(vim.fs.dirname(dir .. "/" .. path), "p")
    local f = assert(io.open(dir .. "/" .. path, "w"))
    f:write(text)
    f:close()
  end
  return vim.fn.resolve(dir)
end

--- Makes `workspace` (from M.workspace) a git repository whose one commit holds its files,
--- as a session that works apart needs.
function M.repository(workspace)
  vim.fn.delete(workspace .. "/.git", "rf")
  local function git(args)
    local out = vim.system(vim.list_extend({ "git", "-C", workspace, "-c", "user.name=t", "-c", "user.email=t@t" }, args), { text = true }):wait()
    assert(out.code == 0, "git " .. table.concat(args, " ") .. ": " .. (out.stderr or ""))
  end
  git({ "init", "--quiet", "-b", "main" })
  git({ "add", "-A" })
  git({ "commit", "--quiet", "-m", "start" })
end

--- `agentls-dev fake-provider` with `script` ({replies = {...}, routes = {...}}); its base URL.
function M.fake(script)
  local file = vim.fn.tempname() .. ".json"
  local f = assert(io.open(file, "w"))
  f:write(vim.json.encode(script))
  f:close()
  local url
  local process = vim.system({ os.getenv("AGENTLS_DEV_BIN"), "fake-provider", "--script", file }, {
    stdin = true,
    stdout = function(_, data)
      if data and not url then
        url = vim.trim(vim.split(data, "\n")[1])
      end
    end,
  })
  table.insert(providers, process)
  M.wait(function()
    return url ~= nil
  end, "the fake provider did not start")
  return url
end

--- The requests the fake provider at `url` received (its GET /__requests), decoded.
function M.requests(url)
  local host, port = url:match("^http://([%d.]+):(%d+)")
  local tcp = vim.uv.new_tcp()
  local response, closed = "", false
  tcp:connect(host, tonumber(port), function(err)
    assert(not err, err)
    tcp:write("GET /__requests HTTP/1.1\r\nHost: " .. host .. "\r\nConnection: close\r\n\r\n")
    tcp:read_start(function(read_err, data)
      if data then
        response = response .. data
      else
        closed = true
        tcp:close()
      end
      assert(not read_err, read_err)
    end)
  end)
  M.wait(function()
    return closed
  end, "the fake provider did not answer /__requests")
  local body = response:match("\r\n\r\n(.*)$")
  return vim.json.decode(body)
end

--- setup() for `workspace` with the fake provider at `url`.
function M.setup(workspace, url, extra)
  vim.cmd.cd(workspace)
  require("agentls").setup(vim.tbl_deep_extend("force", {
    cmd = { os.getenv("AGENTLS_BIN") },
    provider = { kind = "openai", baseUrl = url, model = "fake-model", maxRetries = 0 },
    settings = { stateDir = workspace .. "/.state" },
  }, extra or {}))
end

--- Waits for `condition` without a time limit (no test is bound by the clock): a stuck wait
--- says what it waits for every 30 s, and the run's own limit ends it.
function M.wait(condition, message)
  while not vim.wait(30000, condition, 20) do
    io.stderr:write("still waiting: " .. (message or "a condition") .. "\n")
  end
end

--- Waits until the chat's turn has ended (its `turnEnd` handled): the answer's text shows
--- before the end arrives, and a message sent in between would steer the ending turn.
function M.wait_idle()
  M.wait(function()
    return not require("agentls.live").busy()
  end, "the turn to end (agentls.state.turn = " .. tostring(require("agentls").state.turn) .. ")")
end

function M.transcript()
  local buf = require("agentls.chat").ui.buf
  if not buf or not vim.api.nvim_buf_is_valid(buf) then
    return ""
  end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

--- Waits until the transcript contains `text` (plain).
function M.wait_transcript(text)
  M.wait(function()
    return M.transcript():find(text, 1, true) ~= nil
  end, "the chat never showed " .. vim.inspect(text) .. "; it shows:\n" .. M.transcript())
end

function M.assert_eq(a, b, message)
  if not vim.deep_equal(a, b) then
    error((message or "not equal") .. ": " .. vim.inspect(a) .. " ~= " .. vim.inspect(b), 2)
  end
end

function M.cleanup()
  local chat = require("agentls.chat")
  pcall(chat.close)
  for _, client in ipairs(vim.lsp.get_clients({ name = "agentls" })) do
    client:stop(true)
  end
  vim.wait(5000, function()
    return #vim.lsp.get_clients({ name = "agentls" }) == 0
  end, 20)
  for _, process in ipairs(providers) do
    pcall(function()
      process:write(nil)
      process:kill(9)
    end)
  end
  providers = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    pcall(vim.api.nvim_buf_delete, buf, { force = true })
  end
  local agentls = require("agentls")
  agentls.state.session, agentls.state.turn, agentls.state.status, agentls.state.last_error = nil, nil, nil, nil
  agentls.state.modes, agentls.state.sandbox, agentls.state.worktrees = {}, nil, {}
  local live = require("agentls.live")
  live.queue, live.background = {}, {}
  chat.ui.buf, chat.ui.input, chat.ui.pending_state = nil, nil, nil
  vim.ui.select = M.original_select
end

M.original_select = vim.ui.select

--- Answers the next vim.ui.select calls with the item `pick(items)` returns.
function M.answer_select(pick)
  vim.ui.select = function(items, _, on_choice)
    vim.schedule(function()
      on_choice(pick(items))
    end)
  end
end

return M
