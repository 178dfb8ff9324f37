// `stockade doctor`: what isolation this host can give, one probe a line, with the reason.
#pragma once

namespace stockade::runner {

// Exit 0 when `full` or `namespaces` isolation is available, 1 otherwise.
int doctor_command();

}  // namespace stockade::runner
