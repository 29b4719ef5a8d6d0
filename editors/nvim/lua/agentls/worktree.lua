-- Sessions that work apart: `:AgentWorktree new` starts a chat session in a new git worktree
-- of the workspace's repository, on a branch of its own (agent/session/new with
-- `worktree`), so its turns change the worktree and not your files; `:AgentWorktree apply`
-- brings its work into the workspace (agent/session/applyWorktree: through
-- workspace/applyEdit, so into the buffers, undoable) and puts the files it left as they
-- are (you changed them since, a deletion) in the quickfix list with why. The chat's
-- header shows the branch. `summary` is pure (tests/worktree_spec.lua).

local M = {}

local function agentls()
  return require("agentls")
end

--- The worktree ({path, branch}) of session `id` as agent/session/new answered it in this
--- Neovim, or nil (a session that works in the workspace, or one made elsewhere).
function M.of(id)
  return id and agentls().state.worktrees[id] or nil
end

--- `paths` as "a, b and 2 more".
local function listed(paths, max)
  max = max or 5
  local shown = vim.list_slice(paths, 1, max)
  local text = table.concat(shown, ", ")
  if #paths > max then
    text = text .. string.format(" and %d more", #paths - max)
  end
  return text
end

--- What applyWorktree's answer says: the message, its level and the quickfix items of the
--- conflicts (`top`: the repository's directory, which the answer's paths are relative to).
function M.summary(result, top)
  local applied, unchanged, conflicts = result.applied or {}, result.unchanged or {}, result.conflicts or {}
  local lines = {}
  local branch = result.branch or "the worktree"
  if #applied + #unchanged + #conflicts == 0 then
    return "agentls: " .. branch .. " changed no file: nothing to apply", vim.log.levels.INFO, {}
  end
  if #applied > 0 then
    table.insert(lines, string.format(
      "agentls: applied %d file%s of %s: %s (%s)",
      #applied,
      #applied == 1 and "" or "s",
      branch,
      listed(applied),
      #applied == 1 and "in its buffer: :wall writes it" or "in their buffers: :wall writes them"
    ))
  end
  if #unchanged > 0 then
    table.insert(lines, "agentls: already in the workspace: " .. listed(unchanged))
  end
  local items = {}
  for _, conflict in ipairs(conflicts) do
    table.insert(items, {
      filename = top and vim.fs.normalize(top .. "/" .. conflict.path) or conflict.path,
      lnum = 1,
      col = 1,
      text = "not applied: " .. (conflict.reason or "?"),
      type = "W",
    })
  end
  if #conflicts > 0 then
    table.insert(lines, string.format(
      "agentls: %d file%s not applied (left as they are; see the quickfix list): %s",
      #conflicts,
      #conflicts == 1 and "" or "s",
      listed(vim.tbl_map(function(c)
        return c.path
      end, conflicts))
    ))
  end
  if #applied == 0 and #conflicts == 0 then
    lines[1] = "agentls: nothing to apply from " .. branch .. ": " .. lines[1]:gsub("^agentls: ", "")
  end
  return table.concat(lines, "\n"), #conflicts > 0 and vim.log.levels.WARN or vim.log.levels.INFO, items
end

--- The chat's transcript line that says where the session works.
function M.notice(worktree)
  return string.format(
    "> ⎇ this session works apart, on branch `%s` in %s: your files stay as they are until :AgentWorktree apply",
    worktree.branch,
    worktree.path
  )
end

--- :AgentWorktree new: a new chat session in a worktree of its own.
function M.new()
  local commands = require("agentls.commands")
  local result, err = agentls().request("agent/session/new", { worktree = true })
  if err or not result then
    return vim.notify("agentls: no session in a worktree: " .. (err and err.message or "no answer"), vim.log.levels.ERROR)
  end
  commands.leave_session(result.sessionId)
  if result.worktree then
    agentls().state.worktrees[result.sessionId] = result.worktree
  end
  agentls().set_session(result.sessionId)
  local chat = require("agentls.chat")
  chat.clear()
  chat.open()
  if result.worktree then
    chat.say({ M.notice(result.worktree) })
  end
  return result.sessionId
end

--- The directory of the repository around the workspace (the answer's paths are relative
--- to it).
local function repository_top()
  local client = agentls().running_client()
  local root = client and (client.root_dir or client.config.root_dir) or vim.fn.getcwd()
  local git = vim.fs.find(".git", { path = root, upward = true })[1]
  return vim.fs.normalize(git and vim.fs.dirname(git) or root)
end

--- :AgentWorktree apply: the chat session's work brought into the workspace; returns the
--- answer (nil when refused).
function M.apply()
  local session = agentls().state.session
  if not session then
    return vim.notify("agentls: no chat session: :AgentWorktree new starts one in a worktree", vim.log.levels.WARN)
  end
  local result, err = agentls().request("agent/session/applyWorktree", { sessionId = session })
  if err or not result then
    return vim.notify("agentls: not applied: " .. (err and err.message or "no answer"), vim.log.levels.WARN)
  end
  local message, level, items = M.summary(result, repository_top())
  if #items > 0 then
    vim.fn.setqflist({}, " ", { title = "agentls: not applied from " .. result.branch, items = items })
    vim.cmd("botright copen")
  end
  vim.notify(message, level)
  return result
end

--- :AgentWorktree: where the chat session works.
function M.show()
  local session = agentls().state.session
  local worktree = M.of(session)
  if not worktree then
    return vim.notify(
      session and "agentls: the chat session works in the workspace (:AgentWorktree new starts one apart)"
        or "agentls: no chat session yet (:AgentWorktree new starts one in a worktree)"
    )
  end
  vim.notify(string.format("agentls: the chat session works on branch %s in %s (:AgentWorktree apply brings its work over)", worktree.branch, worktree.path))
end

--- :AgentWorktree [new|apply]
function M.command(arg)
  if arg == "new" then
    return M.new()
  elseif arg == "apply" then
    return M.apply()
  elseif arg == nil or arg == "" then
    return M.show()
  end
  vim.notify("agentls: :AgentWorktree new | apply (not " .. arg .. ")", vim.log.levels.ERROR)
end

return M
