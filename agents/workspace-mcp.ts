import { defineAgent } from 'hangar';

/**
 * An agent whose tools come from an MCP server: the official filesystem server, confined to the
 * workspace (the folder it is given is the only one it serves). Configure the server in the
 * workspace settings (hangar.config.json), as Claude Desktop and VS Code do:
 *
 *   { "mcp": { "servers": { "filesystem": {
 *       "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."] } } } }
 *
 * The server is started on first use; its tools reach the model as `filesystem__read_text_file`,
 * `filesystem__list_directory` and `filesystem__search_files`. Only reading tools are listed:
 * a writing tool (`mcp:filesystem/write_file`) would be better behind `needsApproval: true` on
 * the server.
 */
export default defineAgent({
  description: 'Answers questions about the workspace files through the MCP filesystem server',
  instructions:
    'You answer questions about the files of this workspace. Use the filesystem tools to list folders, search and read files; ' +
    'cite the paths you read. Paths are relative to the workspace root.',
  tools: ['mcp:filesystem/list_directory', 'mcp:filesystem/read_text_file', 'mcp:filesystem/search_files'],
});
