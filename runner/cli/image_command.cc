#include "runner/cli/image_command.h"

#include <unistd.h>

#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/parse.h"
#include "common/syscall.h"
#include "images/import.h"
#include "images/reference.h"
#include "images/registry_auth.h"
#include "images/registry_client.h"
#include "images/store.h"
#include "runner/cli/exit_codes.h"
#include "runner/session/state_dir.h"

namespace stockade::runner {
namespace {

using json = nlohmann::json;

int fail(std::string_view verb, const Error& error, int status = 1) {
    fmt::print(stderr, "stockade image {}: {}\n", verb, error.message);
    return status;
}

json image_json(const images::StoredImage& image) {
    const images::ApplyStats& s = image.stats;
    return json{{"name", image.name},
                {"digest", image.digest.str()},
                {"size", image.size},
                {"entries", image.entries},
                {"source", image.source},
                {"created", image.created},
                {"os_release", image.os_release},
                {"config", image.config.str()},
                {"layers",
                 [&] {
                     json layers = json::array();
                     for (const auto& d : image.layers) {
                         layers.push_back(d.str());
                     }
                     return layers;
                 }()},
                {"skipped", json{{"devices", s.devices_skipped},
                                 {"fifos", s.fifos_skipped},
                                 {"sockets", s.sockets_skipped},
                                 {"setid_bits_stripped", s.setid_stripped},
                                 {"xattrs_dropped", s.xattrs_dropped}}}};
}

Result<images::ImageStore> open_store(const ImageOptions& options, bool create) {
    return images::ImageStore::open(image_store_dir(options.store), create);
}

}  // namespace

std::string image_store_dir(const std::string& flag) {
    return !flag.empty() ? flag : images::ImageStore::default_dir(default_state_dir());
}

int image_import_command(const ImageOptions& options) {
    auto max_bytes = parse_size(options.max_size);
    if (!max_bytes) {
        return fail("import", max_bytes.error().wrap("--max-size"), kExitUsage);
    }
    auto store = open_store(options, true);
    if (!store) {
        return fail("import", store.error());
    }
    const images::ImportOptions import_options{.name = options.name,
                                               .preserve_owner = privileged_caller(),
                                               .max_bytes = *max_bytes,
                                               .max_entries = options.max_entries};
    auto imported = images::import_image(*store, options.input, import_options);
    if (!imported) {
        const Errc code = imported.error().code;
        const int status = code == Errc::kInvalidArgument || code == Errc::kResourceExhausted
                               ? kExitDataError
                           : code == Errc::kNotFound ? kExitNoInput
                                                     : 1;
        return fail("import", imported.error(), status);
    }
    const images::StoredImage& image = imported->image;
    if (options.json) {
        json out = image_json(image);
        out["format"] = imported->format;
        out["already_present"] = imported->already_present;
        fmt::print("{}\n", out.dump(2));
        return 0;
    }
    const images::ApplyStats& s = image.stats;
    fmt::print("{} {} ({}, {} files, {}){}\n", image.name.empty() ? "(no name)" : image.name,
               image.digest.str(), imported->format, image.entries, size_text(image.size),
               imported->already_present ? ": already in the store" : "");
    if (!imported->already_present && (s.devices_skipped + s.fifos_skipped + s.sockets_skipped +
                                       s.setid_stripped + s.xattrs_dropped) > 0) {
        fmt::print(
            "skipped {} device nodes, {} FIFOs, {} sockets; stripped setuid/setgid from "
            "{} files; dropped {} xattrs\n",
            s.devices_skipped, s.fifos_skipped, s.sockets_skipped, s.setid_stripped,
            s.xattrs_dropped);
    }
    return 0;
}

int image_pull_command(const ImageOptions& options) {
    auto reference = images::parse_reference(options.input);
    if (!reference) {
        return fail("pull", reference.error(), kExitUsage);
    }
    auto max_bytes = parse_size(options.max_size);
    if (!max_bytes) {
        return fail("pull", max_bytes.error().wrap("--max-size"), kExitUsage);
    }
    // The store's name: --name, else the reference as given, without its digest.
    std::string name = options.name;
    if (name.empty()) {
        name = options.input.substr(0, options.input.find('@'));
    }
    if (auto checked = images::check_image_name(name); !checked) {
        return fail("pull", checked.error().wrap("give a store name with --name"), kExitUsage);
    }
    auto store = open_store(options, true);
    if (!store) {
        return fail("pull", store.error());
    }
    auto credentials = images::find_credentials(
        images::auth_file_candidates(images::AuthFileSources::from_environment(
            options.authfile.empty() ? std::nullopt
                                     : std::optional<std::filesystem::path>(options.authfile))),
        *reference);
    if (!credentials) {
        return fail("pull", credentials.error());
    }
    images::PullOptions pull;
    pull.credentials = *credentials;
    if (!options.ca_file.empty()) {
        pull.ca_file = options.ca_file;
    }
    pull.insecure_registries = options.insecure_registries;
    const images::ImageStore& held = *store;
    pull.have_blob = [&held](const images::Digest& digest) {
        return held.has_blob(digest);
    };
    // The layout is written beneath the store's own temporary directory, by descriptor.
    auto staging = store->make_staging();
    if (!staging) {
        return fail("pull", staging.error());
    }
    auto pulled = images::pull_to_layout(*reference, pull, staging->fd());
    if (!pulled) {
        const Errc code = pulled.error().code;
        return fail("pull", pulled.error(),
                    code == Errc::kInvalidArgument || code == Errc::kResourceExhausted
                        ? kExitDataError
                        : 1);
    }
    // The client checked every blob while it arrived: they are moved into the store, not
    // copied again.
    const images::ImportOptions import_options{.name = name,
                                               .preserve_owner = privileged_caller(),
                                               .max_bytes = *max_bytes,
                                               .max_entries = options.max_entries,
                                               .layout_verified = true};
    auto imported = images::import_layout(*store, staging->fd(), "", "docker://" + reference->str(),
                                          import_options);
    if (!imported) {
        const Errc code = imported.error().code;
        return fail("pull", imported.error(),
                    code == Errc::kInvalidArgument || code == Errc::kResourceExhausted
                        ? kExitDataError
                        : 1);
    }
    const images::StoredImage& image = imported->image;
    if (options.json) {
        json out = image_json(image);
        out["bytes_fetched"] = pulled->bytes_fetched;
        out["blobs_skipped"] = pulled->blobs_skipped;
        fmt::print("{}\n", out.dump(2));
        return 0;
    }
    fmt::print("{} {} ({} files, {}; fetched {}, {} blobs already here)\n", image.name,
               image.digest.str(), image.entries, size_text(image.size),
               size_text(pulled->bytes_fetched), pulled->blobs_skipped);
    return 0;
}

int image_list_command(const ImageOptions& options) {
    auto store = open_store(options, false);
    std::vector<images::StoredImage> list;
    if (store) {
        auto got = store->list();
        if (!got) {
            return fail("list", got.error());
        }
        list = std::move(got).value();
    } else if (store.error().code != Errc::kNotFound) {
        return fail("list", store.error());
    }
    if (options.json) {
        json out = json::array();
        out.push_back(json{{"name", "host"},
                           {"digest", nullptr},
                           {"source", "the host's /usr, /bin and /lib, read-only"}});
        for (const auto& image : list) {
            out.push_back(image_json(image));
        }
        fmt::print("{}\n", out.dump(2));
        return 0;
    }
    fmt::print("{:<32} {:<19} {:>9} {}\n", "NAME", "DIGEST", "SIZE", "OS");
    fmt::print("{:<32} {:<19} {:>9} {}\n", "host", "-", "-",
               "the host's /usr, /bin and /lib, read-only");
    for (const auto& image : list) {
        fmt::print("{:<32} {:<19} {:>9} {}\n", image.name, image.digest.str().substr(0, 19),
                   size_text(image.size), image.os_release);
    }
    return 0;
}

int image_inspect_command(const ImageOptions& options) {
    auto store = open_store(options, false);
    if (!store) {
        return fail("inspect", store.error());
    }
    auto image = store->find(options.name);
    if (!image) {
        return fail("inspect", image.error());
    }
    if (options.json) {
        fmt::print("{}\n", image_json(*image).dump(2));
        return 0;
    }
    fmt::print(
        "name:       {}\ndigest:     {}\nsize:       {} ({} bytes)\nentries:    {}\n"
        "os_release: {}\nsource:     {}\ncreated:    {}\nlayers:     {}\n",
        image->name, image->digest.str(), size_text(image->size), image->size, image->entries,
        image->os_release, image->source, image->created, image->layers.size());
    return 0;
}

int image_rm_command(const ImageOptions& options) {
    auto store = open_store(options, false);
    if (!store) {
        return fail("rm", store.error());
    }
    if (auto removed = store->remove(options.name); !removed) {
        return fail("rm", removed.error());
    }
    fmt::print("removed {} (its files go with the next `stockade image gc`)\n", options.name);
    return 0;
}

int image_gc_command(const ImageOptions& options) {
    auto store = open_store(options, false);
    if (!store) {
        if (store.error().code == Errc::kNotFound) {
            return 0;
        }
        return fail("gc", store.error());
    }
    auto result = store->gc();
    if (!result) {
        return fail("gc", result.error());
    }
    if (options.json) {
        fmt::print("{}\n", json{{"trees_removed", result->trees_removed},
                                {"trees_in_use", result->trees_in_use},
                                {"blobs_removed", result->blobs_removed},
                                {"temporaries_removed", result->temporaries_removed},
                                {"bytes_freed", result->bytes_freed}}
                               .dump(2));
        return 0;
    }
    fmt::print(
        "removed {} trees and {} blobs, {} freed{}\n", result->trees_removed, result->blobs_removed,
        size_text(result->bytes_freed),
        result->trees_in_use > 0
            ? fmt::format("; kept {} unnamed trees that running sessions use", result->trees_in_use)
            : "");
    return 0;
}

}  // namespace stockade::runner
