// Gemini CLI (@google/gemini-cli), headless, with Stockade as its only tools.
//
// The README's recipe, used verbatim:
//   recipes/gemini/.gemini/settings.json -> <project>/.gemini/settings.json
//       mcpServers.stockade (trust: true) and tools.core ["mcp_stockade_*"]: tools.core is the
//       allowlist of built-in tools, so none of Gemini CLI's own tools is registered; it also
//       denies every tool it does not list (MCP tools too, above `trust`), and its entry
//       mcp_stockade_* allows Stockade's seven, without prompting, headless too. (tools.exclude
//       and policy-engine deny rules cannot do it: excluding the built-in `glob` also drops
//       Stockade's mcp_stockade_glob, because exclusion matches MCP tools by their bare name.)
//   recipes/gemini/headless.sh PROMPT, run in the project directory
//       GEMINI_CLI_TRUST_WORKSPACE=true gemini --prompt PROMPT --output-format json
//
// Test-only additions, kept apart from the recipe: a user-level $HOME/.gemini/settings.json
// (API-key auth, no usage statistics / clearcut logging, no auto-update, no telemetry, no IDE)
// and the environment pointing the Gemini API at the scripted model on 127.0.0.1.
import fs from 'node:fs';
import path from 'node:path';


// The user-level settings a test machine needs; nothing here changes which tools exist.
const userSettings = {
    security: { auth: { selectedType: 'gemini-api-key' } },
    privacy: { usageStatisticsEnabled: false },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    telemetry: { enabled: false },
    ide: { enabled: false },
};

export default {
    name: 'gemini',
    wire: 'gemini',
    bin: 'gemini',
    // Every built-in tool name of Gemini CLI 0.61 (and the legacy alias search_file_content).
    builtinTools: [
        'read_file', 'read_many_files', 'write_file', 'replace', 'glob', 'grep_search',
        'search_file_content', 'list_directory', 'run_shell_command', 'list_background_processes',
        'read_background_output', 'web_fetch', 'google_web_search', 'save_memory', 'write_todos',
        'activate_skill', 'invoke_agent', 'update_topic', 'enter_plan_mode', 'exit_plan_mode',
        'ask_user', 'get_internal_docs', 'list_mcp_resources', 'read_mcp_resource', 'complete_task',
        'take_snapshot', 'tracker_create_task', 'tracker_update_task', 'tracker_get_task',
        'tracker_list_tasks', 'tracker_add_dependency', 'tracker_visualize',
    ],

    async setup({ workspace, home, modelUrl, recipe, prompt }) {
        fs.mkdirSync(path.join(workspace, '.gemini'), { recursive: true });
        fs.copyFileSync(path.join(recipe, '.gemini', 'settings.json'),
            path.join(workspace, '.gemini', 'settings.json'));

        fs.mkdirSync(path.join(home, '.gemini'), { recursive: true });
        fs.writeFileSync(path.join(home, '.gemini', 'settings.json'),
            JSON.stringify(userSettings, null, 2) + '\n');

        return {
            argv: ['sh', path.join(recipe, 'headless.sh'), prompt],
            cwd: workspace,
            env: {
                GEMINI_API_KEY: 'scripted-model-key',
                GOOGLE_GEMINI_BASE_URL: modelUrl,
                GEMINI_CLI_NO_RELAUNCH: 'true', // one node process instead of two
            },
        };
    },
};
