#!/usr/bin/python3
"""Writes seccomp-stockade-nested.json: the container runtime's default seccomp profile plus the
system calls Stockade needs to build its sandboxes inside a pod, allowed whatever the container's
capabilities.

The base is the default profile of Debian's containers-common (/usr/share/containers/seccomp.json:
what podman and CRI-O apply as RuntimeDefault). It already allows clone, clone3, unshare, mount,
umount2, pivot_root and the new mount API; it allows sethostname, setdomainname and setns only to
a container holding CAP_SYS_ADMIN, which a pod that drops every capability never does, and a
fresh UTS namespace is where Stockade sets its sandbox's hostname. Nothing is allowed here that a
Stockade sandbox keeps: its own filter (sandbox/seccomp.cc) takes every one of these calls away
again before the agent's first command runs.

  make-seccomp-profile.py [BASE] > seccomp-stockade-nested.json
"""
import json
import sys

# What Stockade's launcher calls while it builds a sandbox (sandbox/child.cc): new namespaces
# (clone, clone3, unshare, setns), the sandbox's root (mount, the new mount API, pivot_root,
# umount2) and its UTS namespace's names.
NESTED = [
    "clone", "clone3", "unshare", "mount", "umount2", "pivot_root", "mount_setattr",
    "open_tree", "move_mount", "fsopen", "fsmount", "fsconfig", "sethostname",
    "setdomainname", "setns",
]


def nested_profile(base):
    profile = json.loads(json.dumps(base))
    rules = []
    for rule in profile["syscalls"]:
        if rule.get("includes", {}).get("caps") or rule.get("excludes", {}).get("caps"):
            # A rule that depends on the container's capabilities: the NESTED calls leave it,
            # since the rule added below allows them whatever the capabilities.
            names = [name for name in rule["names"] if name not in NESTED]
            if not names:
                continue
            rule = dict(rule, names=names)
        rules.append(rule)
    rules.append({
        "names": NESTED,
        "action": "SCMP_ACT_ALLOW",
        "comment": "Stockade builds its sandboxes with these; its own filter refuses them "
                   "again inside every sandbox",
    })
    profile["syscalls"] = rules
    return profile


def main():
    base_path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    with open(base_path) as base:
        json.dump(nested_profile(json.load(base)), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
