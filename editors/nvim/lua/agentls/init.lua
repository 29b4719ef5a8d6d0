-- agentls for Neovim: one agentls language server per workspace, a chat panel on its
-- agent/session/* requests, approvals, code-action handlers and a statusline figure.
-- The server does the work (context, tools, compaction); this plugin shows it and sends
-- what the editor knows (buffers through LSP, the editor state with each prompt).

local M = {}

local defaults = {
  -- The server command; nil: the one built in this plugin's checkout, else `agentls` on
  -- PATH (M.server_cmd).
  cmd = nil,
  -- Sent as initializationOptions (see docs/protocol.md in the agentls repository).
  provider = nil,
  compaction = nil,
  approval = "ask",
  settings = {},
  chat = {
    layout = "vertical", -- "vertical" | "float"
    width = 0.4,
    input_height = 4,
    busySend = nil, -- sending during a turn: nil asks (steer first), "steer" or "queue"
  },
  keymaps = {
    send = "<CR>", -- normal mode, in the input
    send_insert = "<C-s>", -- insert mode, in the input
    cancel = "<C-c>",
    rewind = "R", -- on a user message of the transcript: "Rewind to here"
    fork = "gR", -- on a user message of the transcript: "Fork from here"
    review = "C", -- on a user message of the transcript: review the changes from that turn on
  },
  root_markers = { ".git", "AGENTS.md", "Cargo.toml", "package.json" },
  -- When the agent needs the user while the chat is not in view: a vim.notify, and with
  -- `bell` the terminal bell too (for a terminal in the background).
  notify = {
    approval = true, -- a permission request waits
    turn_end = true, -- the chat's turn ended
    bell = false,
  },
}

M.config = vim.deepcopy(defaults)

--- Per workspace root: the session and the last status.
M.state = {
  last_error = nil,
  status = nil, -- the last agent/status params
  session = nil, -- the current session id
  turn = nil, -- the running turn id
  modes = {}, -- session id -> the mode :AgentMode set (for a server whose status has none)
  sandbox = nil, -- agent/sandbox/status's answer: the settings' sandbox, before any status
  worktrees = {}, -- session id -> {path, branch}: the sessions that work apart (worktree.lua)
}

--- Calls a client method the way this Neovim expects (0.11: client:method(...); 0.10:
--- client.method(...)).
function M.call(client, method, ...)
  if vim.fn.has("nvim-0.11") == 1 then
    return client[method](client, ...)
  end
  return client[method](...)
end

local function settings()
  local s = vim.deepcopy(M.config.settings or {})
  s.provider = M.config.provider or s.provider
  s.compaction = M.config.compaction or s.compaction
  s.approval = M.config.approval or s.approval
  -- What this plugin answers beyond LSP: agent/editor/diagnostics (agentls.diagnostics)
  -- and agent/editor/lsp (agentls.editor_lsp).
  s.capabilities = vim.tbl_extend("force", s.capabilities or {}, { editorDiagnostics = true, editorLanguageServers = true })
  return s
end

local function is_file_buffer(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  return vim.bo[bufnr].buftype == "" and name ~= "" and not name:match("^%a[%w+.-]*://")
end

--- The workspace of a file buffer (its nearest root marker); for anything else (the chat,
--- a scratch buffer) the one around the current directory.
local function root_for(bufnr)
  local start = is_file_buffer(bufnr) and vim.fs.dirname(vim.api.nvim_buf_get_name(bufnr)) or vim.fn.getcwd()
  local marker = vim.fs.find(M.config.root_markers, { path = start, upward = true })[1]
  return vim.fs.normalize(marker and vim.fs.dirname(marker) or vim.fn.getcwd())
end

--- The agentls client already running for the workspace of `bufnr` (default: the current
--- buffer), or nil.
function M.running_client(bufnr)
  local root = root_for(bufnr or vim.api.nvim_get_current_buf())
  for _, client in ipairs(vim.lsp.get_clients({ name = "agentls" })) do
    if vim.fs.normalize(client.root_dir or client.config.root_dir or "") == root then
      return client
    end
  end
  return nil
end

--- The checkout this plugin lives in (editors/nvim/lua/agentls/init.lua is inside it).
function M.checkout()
  local here = debug.getinfo(1, "S").source:gsub("^@", "")
  return vim.fn.fnamemodify(here, ":p:h:h:h:h:h")
end

--- The server command and where it was found: `cmd` from setup(); else a server built in
--- this plugin's checkout (target/release, target/fast-release, then target/debug), as
--- rust-analyzer's extension carries its own; else `agentls` on PATH.
function M.server_cmd()
  if M.config.cmd then
    return M.config.cmd, "setup({ cmd })"
  end
  local checkout = M.checkout()
  for _, profile in ipairs({ "release", "fast-release", "debug" }) do
    local bin = checkout .. "/target/" .. profile .. "/agentls"
    if vim.fn.executable(bin) == 1 then
      return { bin }, "built in this plugin's checkout"
    end
  end
  return { "agentls" }, "PATH"
end

--- What :checkhealth says when `cmd` cannot be run: how to get a server.
function M.how_to_build(cmd)
  local checkout = M.checkout()
  if vim.fn.filereadable(checkout .. "/server/Cargo.toml") == 1 then
    return string.format(
      "%s is not executable: build the server in this plugin's checkout (cd %s && cargo build --release -p agentls; the plugin then finds target/release/agentls), or install it (cargo install --path server), or set cmd in setup()",
      cmd,
      checkout
    )
  end
  return string.format("%s is not executable: install agentls (cargo install --path server in its repository) or set cmd in setup()", cmd)
end

--- The agentls client of the current workspace, started (or reused) on demand.
function M.client(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local running = M.running_client(bufnr)
  if running then
    return running
  end
  local root = root_for(bufnr)
  require("agentls.diagnostics").track()
  local handlers = require("agentls.handlers")
  local config = {
    name = "agentls",
    cmd = (M.server_cmd()),
    root_dir = root,
    init_options = settings(),
    handlers = handlers.table(),
    -- Every change goes at once (Neovim waits 150 ms by default): the server reads the
    -- buffers as they are when an edit it sent is applied (checkpoints, a turn's changes to
    -- review), and an edit's didChange must reach it before the answer to that edit.
    flags = { debounce_text_changes = 0 },
  }
  if vim.fn.has("nvim-0.11") == 0 and not is_file_buffer(bufnr) then
    -- Neovim 0.10's vim.lsp.start always attaches its buffer: start without one, so the
    -- chat's own buffers never become documents of the workspace.
    local started = vim.lsp.start_client(config)
    return started and vim.lsp.get_client_by_id(started) or nil
  end
  local id = vim.lsp.start(config, {
    bufnr = bufnr,
    -- The chat's own buffers are not documents of the workspace.
    attach = is_file_buffer(bufnr),
    reuse_client = function(client, config)
      return client.name == "agentls" and client.config.root_dir == config.root_dir
    end,
  })
  if not id then
    M.state.last_error = "could not start " .. table.concat((M.server_cmd()), " ")
    vim.notify("agentls: " .. M.state.last_error, vim.log.levels.ERROR)
    return nil
  end
  return vim.lsp.get_client_by_id(id)
end

--- A request to the server, synchronous from the caller's point of view (the editor keeps
--- running while it waits). Returns result, err.
function M.request(method, params, timeout_ms)
  local client = M.client()
  if not client then
    return nil, { message = "agentls is not running" }
  end
  -- A client just started answers nothing until initialize is through.
  vim.wait(10000, function()
    return client.initialized or client:is_stopped()
  end, 10)
  local done, result, err = false, nil, nil
  M.call(client, "request", method, params, function(e, r)
    done, result, err = true, r, e
  end)
  vim.wait(timeout_ms or 30000, function()
    return done
  end, 10)
  if not done then
    return nil, { message = method .. " got no answer" }
  end
  if err then
    M.state.last_error = err.message
  end
  return result, err
end

--- A request whose answer goes to `callback(err, result)` (scheduled on the main loop).
function M.request_async(method, params, callback)
  local client = M.client()
  if not client then
    return callback({ message = "agentls is not running" }, nil)
  end
  M.call(client, "request", method, params, function(err, result)
    if err then
      M.state.last_error = err.message
    end
    vim.schedule(function()
      callback(err, result)
    end)
  end)
end

--- The current session, made on first use.
function M.session()
  if M.state.session then
    return M.state.session
  end
  local result, err = M.request("agent/session/new", {})
  if err or not result then
    vim.notify("agentls: " .. (err and err.message or "no session"), vim.log.levels.ERROR)
    return nil
  end
  M.set_session(result.sessionId)
  return M.state.session
end

--- The current session's mode: its last agent/status's, else what :AgentMode set, else
--- the `approval` setting this plugin sent (the server's default for a new session).
function M.mode()
  local status = M.state.status
  if status and status.sessionId == M.state.session and status.mode then
    return status.mode
  end
  return (M.state.session and M.state.modes[M.state.session]) or M.config.approval or "ask"
end

--- The sandbox the current session's commands run in: its last agent/status's (plan mode's
--- is read-only), else what agent/sandbox/status answered (the settings').
function M.sandbox()
  local status = M.state.status
  if status and status.sessionId == M.state.session and status.sandbox then
    return status.sandbox
  end
  return M.state.sandbox
end

--- The chat's header ('winbar'): the mode, the sandbox and the branch of a session that
--- works apart (agentls/mode.lua).
function M.chat_header()
  return require("agentls.mode").header(M.mode(), M.sandbox(), M.state.worktrees[M.state.session or ""])
end

--- Asks the running server for its sandbox state (agent/sandbox/status) for the chat's
--- header before its first agent/status; never starts one, and a server that does not know
--- the request leaves it unset (no error: an older agentls has no sandbox).
function M.fetch_sandbox()
  local client = M.running_client()
  if not client then
    return
  end
  M.call(client, "request", "agent/sandbox/status", {}, function(err, result)
    if not err and type(result) == "table" then
      vim.schedule(function()
        M.state.sandbox = result
        M.redraw_status()
      end)
    end
  end)
end

--- The statusline figure: "󰚩 42%", "󰚩 ~42%" when estimated, "󰚩 87% ⟳ compacting", the
--- mode after it when it is not `ask` ("󰚩 42% · plan"); "" without a session.
function M.statusline()
  local status = M.state.status
  if not status or status.sessionId ~= M.state.session then
    return ""
  end
  local pct = math.floor((status.fill or 0) * 100 + 0.5)
  local text = string.format("󰚩 %s%d%%", status.estimated and "~" or "", pct)
  local mode = M.mode()
  if mode ~= "ask" then
    text = text .. " · " .. mode
  end
  if M.state.worktrees[M.state.session] then
    text = text .. " · ⎇ worktree"
  end
  if status.state == "compacting" then
    text = text .. " ⟳ compacting"
  elseif status.state == "running" then
    text = text .. " …"
  end
  return text
end

--- Redraws every statusline and winbar (and the tabline) that may show the figure: the
--- file windows too, not only the current one, which is usually the chat.
function M.redraw_status()
  vim.cmd("redrawstatus!")
  vim.cmd("redrawtabline")
end

--- The current session changes (nil: none yet); the figure follows.
function M.set_session(id)
  M.state.session = id
  if id then
    M.fetch_sandbox()
  end
  M.redraw_status()
end

function M.setup(opts)
  local first = not M._setup_done
  M.config = vim.tbl_deep_extend("force", vim.deepcopy(defaults), opts or {})
  M._setup_done = true
  require("agentls.commands").register()
  if first then
    local group = vim.api.nvim_create_augroup("agentls", { clear = true })
    -- Attach the server to file buffers of the workspace, so that it sees what is edited.
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      callback = function(args)
        if vim.bo[args.buf].buftype == "" and vim.api.nvim_buf_get_name(args.buf) ~= "" then
          local client = M.client(args.buf)
          if client and not vim.lsp.buf_is_attached(args.buf, client.id) then
            vim.lsp.buf_attach_client(args.buf, client.id)
          end
        end
      end,
    })
  else
    -- Later calls: the running servers get the new settings.
    for _, client in ipairs(vim.lsp.get_clients({ name = "agentls" })) do
      M.call(client, "notify", "workspace/didChangeConfiguration", { settings = settings() })
    end
  end
end

return M
