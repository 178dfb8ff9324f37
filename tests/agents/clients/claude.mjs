// Claude Code (npm @anthropic-ai/claude-code, a native binary) run headless against Stockade.
//
// The recipe is the README's, run as it is: recipes/claude/setup.sh (`claude mcp add stockade --
// stockade serve --workspace "$PWD" --network allowlist --allow-preset registries`, which writes
// the server into the local scope: ~/.claude.json, projects[<cwd>].mcpServers; no approval step)
// runs with the test's HOME in the project, and
// recipes/claude/headless.sh (`claude -p "$1" --tools "" --allowedTools mcp__stockade`) is the
// command the runner starts there, with the task as its argument.
//   --tools ""                   offers the model no built-in tool at all (Bash, Read, Write, Edit,
//                                Glob, Grep, Agent, ToolSearch, WebFetch...; tool search is off, so
//                                Stockade's tools are in the tools array from the first request)
//   --allowedTools mcp__stockade lets every Stockade tool run without a permission prompt; without
//                                it -p mode hands the model "Claude requested permissions to use
//                                mcp__stockade__read, but you haven't granted it yet."
// Only the environment below is the test's own: the scripted model as the API, a dummy key, and
// no traffic besides the model's (telemetry, error reports, feature flags, updates).
import { execFileSync } from 'node:child_process';
import path from 'node:path';


const BUILTIN = [
    'Agent', 'Task', 'Bash', 'BashOutput', 'KillShell', 'Read', 'Write', 'Edit', 'MultiEdit', 'Glob',
    'Grep', 'LS', 'NotebookEdit', 'NotebookRead', 'WebFetch', 'WebSearch', 'TodoWrite', 'ToolSearch',
    'Skill', 'SlashCommand', 'ExitPlanMode', 'ListAgents', 'ReportFindings', 'ScheduleWakeup',
    'Workflow', 'Monitor', 'SendMessage', 'TaskStop', 'CronCreate', 'CronDelete', 'CronList',
    'EnterWorktree', 'ExitWorktree', 'ListMcpResourcesTool', 'ReadMcpResourceTool',
];

function quietEnv(modelUrl) {
    return {
        ANTHROPIC_BASE_URL: modelUrl,
        ANTHROPIC_API_KEY: 'sk-ant-scripted-model-dummy',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
        CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY: '1',
    };
}

export default {
    name: 'claude',
    wire: 'anthropic-messages',
    bin: 'claude',
    builtinTools: BUILTIN,

    async setup({ workspace, home, modelUrl, recipe, cliBin, base, prompt }) {
        const env = {
            PATH: `${path.join(base, 'bin')}:${cliBin}:${process.env.PATH}`,
            HOME: home,
            LANG: 'C.UTF-8',
            TERM: 'dumb',
            ...quietEnv(modelUrl),
        };
        // The README's lines, with the project as the current directory (so "$PWD" is it).
        execFileSync('sh', ['-eu', path.join(recipe, 'setup.sh')], {
            cwd: workspace, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000,
        });
        return {
            argv: ['sh', '-eu', path.join(recipe, 'headless.sh'), prompt],
            env: quietEnv(modelUrl),
            cwd: workspace,
        };
    },
};
