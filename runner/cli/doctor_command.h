// `stockade doctor`: what isolation this host can give, one probe a line, with the reason; with
// --tenants FILE, what each tenant's sessions of `serve --http` will get.
#pragma once

#include <string>

namespace stockade::runner {

// Exit 0 when `full` or `namespaces` isolation is available, 1 otherwise.
int doctor_command();

// `stockade doctor --tenants FILE`: the probes, then per tenant of FILE what its sessions will
// get here (runner/host/tenant_doctor.h) and a verdict. Exit 0 when no tenant has an error
// (warnings allowed), 1 otherwise, 2 when FILE does not parse (the parser's message on stderr).
int doctor_tenants_command(const std::string& tenants_file);

}  // namespace stockade::runner
