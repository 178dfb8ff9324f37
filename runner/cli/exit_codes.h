// The exit codes every verb shares, besides a command's own status (`run`, `call`'s bash).
#pragma once

namespace stockade::runner {

inline constexpr int kExitUsage = 2;          // a flag or argument is wrong: the message says which
inline constexpr int kExitDataError = 65;     // image import|pull: the image was refused (sysexits)
inline constexpr int kExitNoInput = 66;       // image import: the file or directory is not there
inline constexpr int kExitUnavailable = 77;   // the isolation level asked for is not available
inline constexpr int kExitTimeout = 124;      // run --timeout expired; the sandbox was killed
inline constexpr int kExitSetupFailed = 125;  // stockade itself could not build the sandbox
inline constexpr int kExitNotExecutable = 126;  // run: the command exists but cannot be executed
inline constexpr int kExitNotFound = 127;       // run: the command is not on the sandbox's PATH

}  // namespace stockade::runner
