// stockade-worker: the session worker, alone (runner/worker/worker_main.h). Not meant to be run
// by hand: the supervisor executes it inside each session's sandbox.
#include <cstdio>

#include "runner/worker/worker_main.h"

int main(int argc, char** argv) {
    int status = 0;
    if (stockade::worker::run_worker_if_asked(argc, argv, &status)) {
        return status;
    }
    (void)std::fputs(
        "stockade-worker: the session worker of stockade serve and call; it is "
        "started by stockade inside each session's sandbox, not by hand\n",
        stderr);
    return 2;
}
