"""An MCP server whose tool set changes while it runs (for tests/lsp_mcp.rs): its `grow` tool
adds a tool named as asked and sends notifications/tools/list_changed. Built on the official
Python SDK (`mcp`), installed with mcp-server-time by scripts/mcp-servers."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("growing")


@server.tool()
async def grow(name: str, ctx: Context) -> str:
    """Adds a tool called NAME that answers with its own name."""

    def grown() -> str:
        return f"{name} was grown"

    server.add_tool(grown, name=name, description=f"A tool grown at run time: {name}")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


if __name__ == "__main__":
    server.run()
