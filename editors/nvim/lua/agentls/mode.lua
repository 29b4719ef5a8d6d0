-- The session's mode and the sandbox as the chat's header and :checkhealth show them: the
-- modes agent/session/setMode takes, and the words for agent/status's `mode` and `sandbox`
-- (the same object agent/sandbox/status answers). Pure: data in, text out
-- (tests/mode_spec.lua).

local M = {}

--- The modes of agent/session/setMode, in the server's order, with what each means.
M.MODES = {
  { id = "ask", description = "ask before every edit and command" },
  { id = "auto-edit", description = "edit without asking; ask before commands" },
  { id = "full-auto", description = "edit and run commands without asking" },
  { id = "plan", description = "read-only: explore and plan, no edits" },
}

--- Whether `id` names a mode.
function M.is_mode(id)
  for _, mode in ipairs(M.MODES) do
    if mode.id == id then
      return true
    end
  end
  return false
end

--- The sandbox in a few words, and whether it is a warning (no sandbox where one was
--- expected). nil when the server says nothing of a sandbox (a server without one).
function M.sandbox_text(sandbox)
  if type(sandbox) ~= "table" then
    return nil, false
  end
  if sandbox.available == false then
    return "sandbox unavailable" .. (sandbox.message and (": " .. sandbox.message) or ""), true
  end
  if sandbox.mode == "off" then
    return "sandbox off", false
  end
  local text = "sandbox: " .. tostring(sandbox.mode or "?") .. (sandbox.network and "" or ", no network")
  if sandbox.enforced == false then
    return text .. " (not enforced" .. (sandbox.message and (": " .. sandbox.message) or "") .. ")", true
  end
  return text, false
end

--- `text` safe inside a 'winbar' ('%' is its escape).
local function escape(text)
  return (text:gsub("%%", "%%%%"))
end

--- The chat's 'winbar': "agentls · plan · sandbox: read-only, no network", a sandbox
--- warning in WarningMsg; a session that works apart (`worktree`: {branch, path}) ends with
--- its branch, cut first when the window is narrow: "agentls · ask · ⎇ agentls/session-…".
function M.header(mode, sandbox, worktree)
  local parts = { "agentls", escape(mode or "?") }
  local text, warn = M.sandbox_text(sandbox)
  if text then
    table.insert(parts, warn and ("%#WarningMsg#" .. escape(text) .. "%*") or escape(text))
  end
  if type(worktree) == "table" and worktree.branch then
    table.insert(parts, "%<%#Special#⎇ " .. escape(worktree.branch) .. "%*")
  end
  return table.concat(parts, " · ")
end

--- :checkhealth's line for agent/sandbox/status's answer: { level, text }.
function M.health(sandbox)
  local text, warn = M.sandbox_text(sandbox)
  if not text then
    return { "info", "the server reports no sandbox" }
  end
  if warn then
    return { "warn", text .. ": commands are guarded by approvals alone" }
  end
  if sandbox.mode == "off" then
    return { "warn", "sandbox off (sandbox: \"off\"): commands run with your full rights" }
  end
  return { "ok", text }
end

return M
