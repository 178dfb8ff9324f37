// The host's process tree as /proc shows it, for tests that look for what a server left running.
import fs from 'node:fs';

// pid -> [ppid, cmdline] of every process this user may read.
export function processTree() {
    const out = new Map();
    for (const entry of fs.readdirSync('/proc')) {
        if (!/^\d+$/.test(entry)) continue;
        try {
            const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
            const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
            const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
            out.set(Number(entry), [ppid, cmdline]);
        } catch { /* gone, or not ours to read */ }
    }
    return out;
}

// Every process below `pid`, as { pid, cmdline }.
export function descendantsOf(pid) {
    const tree = processTree();
    const found = [];
    const walk = (parent) => {
        for (const [child, [ppid, cmdline]] of tree) {
            if (ppid === parent) { found.push({ pid: child, cmdline }); walk(child); }
        }
    };
    walk(pid);
    return found;
}
