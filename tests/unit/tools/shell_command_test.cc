#include "tools/shell_command.h"

#include <gtest/gtest.h>

namespace stockade::tools {
namespace {

using Words = std::vector<std::string>;

// ---- Direct or shell ---------------------------------------------------------------------

TEST(PlanCommandTest, PlainWordsRunDirectly) {
    const std::vector<std::pair<std::string, Words>> cases = {
        {"npm test", {"npm", "test"}},
        {"ls -la src/", {"ls", "-la", "src/"}},
        {"make -j4 CC=gcc", {"make", "-j4", "CC=gcc"}},
        {"git log --oneline -5", {"git", "log", "--oneline", "-5"}},
        {"  python3 -m pytest tests/unit -x  ", {"python3", "-m", "pytest", "tests/unit", "-x"}},
        {"curl http://localhost:5173/api?", {}},  // '?' is a glob: shell
        {"node\tscripts/build.js --mode=prod", {"node", "scripts/build.js", "--mode=prod"}},
        {"npx tsc -p tsconfig.json,@scope/pkg%1+2",
         {"npx", "tsc", "-p", "tsconfig.json,@scope/pkg%1+2"}},
        // Builtins that are also programs, with the same behaviour for plain words.
        {"true", {"true"}},
        {"echo hi", {"echo", "hi"}},
        {"test -f x", {"test", "-f", "x"}},
    };
    for (const auto& [command, argv] : cases) {
        const ShellPlan plan = plan_command(command);
        if (argv.empty()) {
            EXPECT_EQ(plan.kind, ShellKind::kBash) << command;
            continue;
        }
        EXPECT_EQ(plan.kind, ShellKind::kDirect) << command;
        EXPECT_EQ(plan.argv, argv) << command;
    }
}

TEST(PlanCommandTest, ShellSyntaxBuiltinsAndAssignmentsGoThroughBash) {
    for (const std::string command : {
             "npm test | head",
             "echo $HOME",
             "ls *.cc",
             "ls src/[ab].c",
             "cd src",
             "export A=1",
             "A=1 make",
             "ls ~",
             "grep 'a b' x",
             "grep \"a\" x",
             "a && b",
             "a || b",
             "a; b",
             "sleep 1 &",
             "cat < x",
             "ls > out",
             "[ -f x ]",
             "[[ -f x ]]",
             "a\nb",
             "a\\ b",
             "if true; then :; fi",
             "source env.sh",
             ". env.sh",
             "(cd x)",
             "ls {a,b}",
             "echo `date`",
             "set -e",
             "exit 1",
             "ls #comment",
         }) {
        const ShellPlan plan = plan_command(command);
        EXPECT_EQ(plan.kind, ShellKind::kBash) << command;
        EXPECT_EQ(plan.argv, (Words{"/bin/bash", "-c", command})) << command;
    }
    EXPECT_EQ(shell_kind_name(ShellKind::kBash), "bash");
    EXPECT_EQ(shell_kind_name(ShellKind::kDirect), "direct");
}

TEST(PlanCommandTest, BuiltinsAndKeywordsAreKnown) {
    for (const char* w : {"cd", "export", "source", ".", ":", "[", "[[", "if", "for", "while",
                          "time", "eval", "exec", "alias", "ulimit", "{"}) {
        EXPECT_TRUE(is_shell_builtin(w)) << w;
    }
    for (const char* w : {"npm", "git", "ls", "grep", "cdx"}) {
        EXPECT_FALSE(is_shell_builtin(w)) << w;
    }
}

// ---- Lexing and the program --------------------------------------------------------------

TEST(LexCommandTest, SplitsSimpleCommandsAndRemovesQuotes) {
    const LexedCommand lexed =
        lex_command("cd 'my dir' && grep -r \"a b\" . | wc -l; echo $(date) `id`\nls a\\ b");
    EXPECT_TRUE(lexed.compound);
    const std::vector<Words> want = {
        {"cd", "my dir"}, {"grep", "-r", "a b", "."}, {"wc", "-l"}, {"echo"}, {"date"}, {"id"},
        {"ls", "a b"},
    };
    EXPECT_EQ(lexed.commands, want);
}

TEST(LexCommandTest, RedirectionsAreNotSeparators) {
    const LexedCommand lexed = lex_command("make 2>&1 >build.log &>/dev/null");
    EXPECT_FALSE(lexed.compound);
    EXPECT_EQ(lexed.commands, (std::vector<Words>{{"make", "2", "1", "build.log", "/dev/null"}}));
}

TEST(LexCommandTest, HereDocumentBodiesAreData) {
    const LexedCommand lexed = lex_command(
        "cat > clean.sh <<'EOF'\nrm -rf build\nEOF\nchmod +x clean.sh\n"
        "cat <<-END\n\tgit push -f\n\tEND\necho done");
    const std::vector<Words> want = {
        {"cat", "clean.sh"}, {"chmod", "+x", "clean.sh"}, {"cat"}, {"echo", "done"}};
    EXPECT_EQ(lexed.commands, want);
}

TEST(LexCommandTest, CommentsAreSkipped) {
    EXPECT_EQ(lex_command("ls # rm -rf /").commands, (std::vector<Words>{{"ls"}}));
    EXPECT_EQ(lex_command("echo a#b").commands, (std::vector<Words>{{"echo", "a#b"}}));
}

TEST(ProgramTest, SkipsAssignmentsKeywordsAndWrappers) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"FOO=1 BAR=2 npm test", "npm"},
        {"sudo -u root rm -rf /", "rm"},
        {"env -i A=1 grep x", "grep"},
        {"timeout 10 grep x y", "grep"},
        {"timeout -s KILL 10 make", "make"},
        {"/usr/bin/grep x", "grep"},
        {"time grep x", "grep"},
        {"nice -n 5 make", "make"},
        {"! grep x", "grep"},
        {"A=1", ""},
    };
    for (const auto& [command, program] : cases) {
        const LexedCommand lexed = lex_command(command);
        ASSERT_EQ(lexed.commands.size(), 1U) << command;
        EXPECT_EQ(program_of(lexed.commands[0]), program) << command;
    }
    EXPECT_EQ(simple_program("grep x | wc -l"), "");
    EXPECT_EQ(simple_program("LC_ALL=C grep -q x y 2>/dev/null"), "grep");
    EXPECT_EQ(first_program_word("npmm install && npm test"), "npmm");
    EXPECT_EQ(first_program_word("FOO=1 ./build.sh --fast"), "./build.sh");
    EXPECT_EQ(first_program_word(""), "");
}

// ---- Semantic exit codes -----------------------------------------------------------------

struct SemanticCase {
    std::string command;
    std::optional<int> exit_code;
    std::optional<int> signal;
    std::string status;
    std::string message;
};

TEST(SemanticStatusTest, Table) {
    const std::vector<SemanticCase> cases = {
        {"grep foo x", 1, {}, "ok", "No matches found"},
        {"rg foo", 1, {}, "ok", "No matches found"},
        {"egrep 'a|b' x", 1, {}, "ok", "No matches found"},
        {"fgrep a x", 1, {}, "ok", "No matches found"},
        {"LC_ALL=C grep -q x y", 1, {}, "ok", "No matches found"},
        {"diff a b", 1, {}, "ok", "Files differ"},
        {"cmp a b", 1, {}, "ok", "Files differ"},
        {"test -f x", 1, {}, "ok", "Condition is false"},
        {"[ -f x ]", 1, {}, "ok", "Condition is false"},
        {"[[ -f x ]]", 1, {}, "ok", "Condition is false"},
        {"find / -name x", 1, {}, "ok", "Some paths could not be read"},
        {"grep foo x", 0, {}, "ok", ""},
        {"grep foo x", 2, {}, "error", ""},
        {"diff a b", 2, {}, "error", ""},
        {"grep x y | wc -l", 1, {}, "error", ""},
        {"grep x y && echo yes", 1, {}, "error", ""},
        {"make", 1, {}, "error", ""},
        {"npm test", 0, {}, "ok", ""},
        {"sleep 100", {}, 9, "signal", ""},
        {"grep x", {}, 15, "signal", ""},
    };
    for (const SemanticCase& c : cases) {
        const SemanticStatus s = semantic_status(c.command, c.exit_code, c.signal);
        EXPECT_EQ(s.status, c.status) << c.command;
        EXPECT_EQ(s.message, c.message) << c.command;
    }
}

// ---- bash's own spawn failures and near misses -------------------------------------------

TEST(BashSpawnFailureTest, RecognisesBashNotFoundLines) {
    EXPECT_EQ(bash_spawn_failure("/bin/bash: line 1: npmm: command not found\n", "npmm"),
              "command not found");
    EXPECT_EQ(bash_spawn_failure("bash: npmm: command not found", "npmm"), "command not found");
    EXPECT_EQ(bash_spawn_failure("/usr/bin/bash: line 12: npmm: command not found\r\n", "npmm"),
              "command not found");
    EXPECT_EQ(bash_spawn_failure("/bin/bash: line 1: ./x.sh: No such file or directory", "./x.sh"),
              "No such file or directory");
    EXPECT_EQ(bash_spawn_failure("/bin/bash: line 1: other: command not found", "npmm"),
              std::nullopt);
    EXPECT_EQ(bash_spawn_failure("output\n/bin/bash: line 2: npmm: command not found", "npmm"),
              std::nullopt);
    EXPECT_EQ(bash_spawn_failure("sh: 1: npmm: not found", "npmm"), std::nullopt);
    EXPECT_EQ(bash_spawn_failure("npmm: command not found", "npmm"), std::nullopt);
    EXPECT_EQ(bash_spawn_failure("/bin/bash: line x: npmm: command not found", "npmm"),
              std::nullopt);
    EXPECT_EQ(bash_spawn_failure("", "npmm"), std::nullopt);
}

TEST(SuggestCommandTest, ClosestExecutable) {
    const std::vector<std::string> path = {"gcc", "git", "gitk",   "make",    "node", "npm",
                                           "npx", "pip", "python", "python3", "tig"};
    EXPECT_EQ(suggest_command("npmm", path), "npm");
    EXPECT_EQ(suggest_command("gti", path), "git");
    EXPECT_EQ(suggest_command("pytohn", path), "python");
    EXPECT_EQ(suggest_command("mkae", path), "make");
    EXPECT_EQ(suggest_command("nod", path), "node");
    EXPECT_EQ(suggest_command("kubectl", path), std::nullopt);
    EXPECT_EQ(suggest_command("git", path), std::nullopt);  // the word itself is no suggestion
    EXPECT_EQ(suggest_command("./npmm", path), std::nullopt);
    EXPECT_EQ(suggest_command("", path), std::nullopt);
}

}  // namespace
}  // namespace stockade::tools
