-- The live turn in Neovim: sending while a turn runs offers "steer now" (first, the default)
-- and "queue"; a steered message reaches the same turn's next model request; the queue is
-- kept from the server's `queue` updates and a message is withdrawn from it; background
-- commands are listed from `background` updates and :AgentBackground stops one.
local h = require("helpers")

test("the live lines and the busy choices", function()
  local live = require("agentls.live")
  h.assert_eq(live.BUSY_CHOICES[1].id, "steer", "steer is the default")
  h.assert_eq(live.queue_line({ kind = "steering", text = "also this\nmore" }), "↳ steering: also this")
  h.assert_eq(live.queue_line({ kind = "queued", text = "later" }), "⏳ queued: later")
  h.assert_eq(live.background_line({ id = "bg1", state = "running", command = "npm run dev" }), "bg1 [running] npm run dev")
  h.assert_eq(live.background_line({ id = "bg2", state = "exited", exitCode = 0, command = "make" }), "bg2 [exited 0] make")
  live.on_update({ kind = "background", commands = { { id = "bg1", state = "running", command = "x" } } }, function() end)
  live.on_update({ kind = "queue", items = { { id = "q", kind = "queued", text = "t" } } }, function() end)
  h.assert_eq(live.summary(), "1 waiting · 1 bg")
end)

test("steer now joins the running turn; a queued message is withdrawn before it runs", function()
  local ws = h.workspace({ ["src/lib.rs"] = "pub fn answer() -> u32 {\n    41\n}\n" })
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "s1", name = "shell", arguments = { command = "sleep 3" } } } },
      { text = { "Took the steer." } },
    },
  })
  h.setup(ws, url, { approval = "full-auto" })
  local offered
  h.answer_select(function(items)
    offered = items
    return items[1]
  end)
  vim.cmd("AgentChat")
  local chat = require("agentls.chat")
  chat.send("Run the slow command.")
  h.wait_transcript("sleep 3")
  chat.send("Also say hi.")
  h.wait(function()
    return offered ~= nil
  end, "the steer / queue choice")
  h.wait_transcript("↳ steering")
  h.assert_eq(offered[1].id, "steer", "steer is offered first")
  h.assert_eq(offered[2].id, "queue")
  -- Queued, then withdrawn from the queue the server reports.
  h.answer_select(function(items)
    return items[2]
  end)
  chat.send("WITHDRAWN")
  local live = require("agentls.live")
  h.wait(function()
    for _, item in ipairs(live.queue) do
      if item.text == "WITHDRAWN" then
        return true
      end
    end
    return false
  end, "the queue update listing the queued message: " .. vim.inspect(live.queue))
  local queued
  for _, item in ipairs(live.queue) do
    if item.text == "WITHDRAWN" then
      queued = item
    end
  end
  h.assert_eq(queued.kind, "queued")
  assert(live.withdraw(queued.id), "withdrawn")
  h.wait_transcript("## You (steering)")
  h.wait_transcript("Took the steer.")
  local requests = h.requests(url)
  h.assert_eq(#requests, 2, "no request for the withdrawn message")
  local messages = requests[2].body.messages
  h.assert_eq(messages[#messages - 1].role, "tool")
  h.assert_eq(messages[#messages].content, "Also say hi.")
  assert(not vim.json.encode(requests):find("WITHDRAWN", 1, true), "the withdrawn message was sent")
end)

test(":AgentBackground lists the running commands and stops the chosen one", function()
  local ws = h.workspace({})
  local url = h.fake({
    replies = {
      { toolCalls = { { id = "b1", name = "shell", arguments = { command = "sleep 1000", background = true } } } },
      { text = { "Started it." } },
    },
  })
  h.setup(ws, url, { approval = "full-auto" })
  vim.cmd("AgentChat")
  require("agentls.chat").send("Start a server.")
  h.wait_transcript("Started it.")
  local live = require("agentls.live")
  h.wait(function()
    return live.background[1] and live.background[1].state == "running"
  end, "a background update with bg1 running: " .. vim.inspect(live.background))
  h.assert_eq(live.summary(), "1 bg")
  h.answer_select(function(items)
    return items[1]
  end)
  vim.cmd("AgentBackground")
  h.wait(function()
    return live.background[1] and live.background[1].state == "exited"
  end, "bg1 stopped: " .. vim.inspect(live.background))
end)
