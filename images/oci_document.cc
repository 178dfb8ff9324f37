#include "images/oci_document.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/json_depth.h"
#include "common/parse.h"
#include "common/quote.h"
#include "common/strict_json.h"
#include "images/reference.h"

namespace stockade::images {
namespace {

using nlohmann::json;

Error invalid(std::string_view message) {
    return Error{Errc::kInvalidArgument, std::string(message)};
}

Error field_error(std::string_view path, std::string_view problem) {
    return invalid(fmt::format("{}: {}", path, problem));
}

std::string member_path(std::string_view path, std::string_view key) {
    return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string item_path(std::string_view path, std::size_t index) {
    return fmt::format("{}[{}]", path, index);
}

// JSON within our bounds, with a key given twice in one object refused (common/strict_json.h):
// two readers of such a document may each take a different one of the two values, and then see
// two different images.
Result<json> parse_json(std::string_view text) {
    if (text.size() > kMaxDocumentBytes) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("{} bytes is past the limit of {} MiB for a document", text.size(),
                                 kMaxDocumentBytes >> 20)};
    }
    if (json_nesting_depth(text, kMaxDocumentNesting) > kMaxDocumentNesting) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("nested deeper than {} levels", kMaxDocumentNesting)};
    }
    return parse_strict_json(text, kMaxDocumentNesting);
}

std::string_view type_name(const json& value) {
    if (value.is_number_integer()) {
        return "an integer";
    }
    switch (value.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::object:
            return "an object";
        case json::value_t::array:
            return "an array";
        case json::value_t::string:
            return "a string";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float:
            return "a number";
        case json::value_t::binary:
        case json::value_t::discarded:
            break;
    }
    return "a value of another kind";
}

Error wrong_type(std::string_view path, std::string_view expected, const json& value) {
    return field_error(path, fmt::format("expected {}, not {}", expected, type_name(value)));
}

Status require_object(const json& value, std::string_view path) {
    if (!value.is_object()) {
        return wrong_type(path.empty() ? "document" : path, "an object", value);
    }
    return ok_status();
}

// The member `key` of `object`, or nullptr when it is absent (or null, where `null_is_absent`).
const json* find(const json& object, std::string_view key, bool null_is_absent = false) {
    const auto it = object.find(key);
    if (it == object.end() || (null_is_absent && it->is_null())) {
        return nullptr;
    }
    return &*it;
}

Result<std::string> string_at(const json& value, std::string_view path) {
    if (!value.is_string()) {
        return wrong_type(path, "a string", value);
    }
    return value.get<std::string>();
}

Result<std::string> required_string(const json& object, std::string_view path,
                                    std::string_view key) {
    const std::string at = member_path(path, key);
    const json* value = find(object, key);
    if (value == nullptr) {
        return field_error(at, "missing");
    }
    return string_at(*value, at);
}

Result<std::optional<std::string>> optional_string(const json& object, std::string_view path,
                                                   std::string_view key,
                                                   bool null_is_absent = false) {
    const json* value = find(object, key, null_is_absent);
    if (value == nullptr) {
        return std::optional<std::string>();
    }
    ASSIGN_OR_RETURN(std::string text, string_at(*value, member_path(path, key)));
    return std::optional<std::string>(std::move(text));
}

// An array member (absent, or null where allowed, is empty) of at most `max` items.
Result<const json*> array_at(const json& object, std::string_view path, std::string_view key,
                             bool required, std::size_t max, bool null_is_absent = false) {
    const std::string at = member_path(path, key);
    const json* value = find(object, key, null_is_absent);
    if (value == nullptr) {
        if (required) {
            return field_error(at, "missing");
        }
        return static_cast<const json*>(nullptr);
    }
    if (!value->is_array()) {
        return wrong_type(at, "an array", *value);
    }
    if (value->size() > max) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("{}: {} items is past the limit of {}", at, value->size(), max)};
    }
    return value;
}

bool has_nul(std::string_view text) {
    return text.find('\0') != std::string_view::npos;
}

Result<std::vector<std::string>> string_array(const json& object, std::string_view path,
                                              std::string_view key, bool required, std::size_t max,
                                              bool null_is_absent = false) {
    ASSIGN_OR_RETURN(const json* array, array_at(object, path, key, required, max, null_is_absent));
    std::vector<std::string> out;
    if (array == nullptr) {
        return out;
    }
    const std::string at = member_path(path, key);
    for (std::size_t i = 0; i < array->size(); ++i) {
        ASSIGN_OR_RETURN(std::string text, string_at((*array)[i], item_path(at, i)));
        out.push_back(std::move(text));
    }
    return out;
}

Result<std::map<std::string, std::string>> annotations_at(const json& object,
                                                          std::string_view path) {
    std::map<std::string, std::string> out;
    const json* value = find(object, "annotations");
    if (value == nullptr) {
        return out;
    }
    const std::string at = member_path(path, "annotations");
    if (!value->is_object()) {
        return wrong_type(at, "an object", *value);
    }
    for (const auto& [key, item] : value->items()) {
        ASSIGN_OR_RETURN(std::string text, string_at(item, member_path(at, key)));
        out.emplace(key, std::move(text));
    }
    return out;
}

// RFC 6838 §4.2 as the OCI spec's descriptor schema writes it: type "/" subtype, each
// [A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}.
bool is_media_type(std::string_view text) {
    const auto part_ok = [](std::string_view part) {
        if (part.empty() || part.size() > 127) {
            return false;
        }
        for (std::size_t i = 0; i < part.size(); ++i) {
            const char c = part[i];
            const bool alnum =
                (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            if (!alnum &&
                (i == 0 || std::string_view("!#$&^_.+-").find(c) == std::string_view::npos)) {
                return false;
            }
        }
        return true;
    };
    const std::size_t slash = text.find('/');
    return slash != std::string_view::npos && part_ok(text.substr(0, slash)) &&
           part_ok(text.substr(slash + 1));
}

Result<std::string> media_type_at(const json& object, std::string_view path, bool required) {
    const std::string at = member_path(path, "mediaType");
    ASSIGN_OR_RETURN(std::optional<std::string> value, optional_string(object, path, "mediaType"));
    if (!value) {
        if (required) {
            return field_error(at, "missing");
        }
        return std::string();
    }
    if (!is_media_type(*value)) {
        return field_error(at, fmt::format("{} is not a media type", quote(*value)));
    }
    return std::move(*value);
}

Result<uint64_t> size_at(const json& object, std::string_view path) {
    const std::string at = member_path(path, "size");
    const json* value = find(object, "size");
    if (value == nullptr) {
        return field_error(at, "missing");
    }
    if (value->is_number_unsigned()) {
        const auto size = value->get<uint64_t>();
        if (size > kMaxBlobSize) {
            return field_error(at, fmt::format("{} bytes is past the limit of {} for a blob", size,
                                               size_text(kMaxBlobSize)));
        }
        return size;
    }
    if (value->is_number_integer()) {
        return field_error(at, fmt::format("{} is negative", value->get<int64_t>()));
    }
    if (value->is_number()) {
        return field_error(at, "not a whole number of bytes");
    }
    return wrong_type(at, "an integer", *value);
}

Result<Digest> digest_at(const json& value, std::string_view at) {
    ASSIGN_OR_RETURN(std::string text, string_at(value, at));
    auto digest = Digest::parse(text);
    if (!digest) {
        return std::move(digest).error().wrap(at);
    }
    return std::move(*digest);
}

Result<Platform> platform_fields(const json& object, std::string_view path) {
    Platform platform;
    ASSIGN_OR_RETURN(platform.os, required_string(object, path, "os"));
    ASSIGN_OR_RETURN(platform.architecture, required_string(object, path, "architecture"));
    if (platform.os.empty()) {
        return field_error(member_path(path, "os"), "empty");
    }
    if (platform.architecture.empty()) {
        return field_error(member_path(path, "architecture"), "empty");
    }
    ASSIGN_OR_RETURN(std::optional<std::string> variant, optional_string(object, path, "variant"));
    platform.variant = variant.value_or("");
    ASSIGN_OR_RETURN(std::optional<std::string> version,
                     optional_string(object, path, "os.version"));
    platform.os_version = version.value_or("");
    ASSIGN_OR_RETURN(platform.os_features, string_array(object, path, "os.features", false, 64));
    return platform;
}

Result<Descriptor> read_descriptor(const json& value, std::string_view path) {
    RETURN_IF_ERROR(require_object(value, path));
    Descriptor d;
    ASSIGN_OR_RETURN(d.media_type, media_type_at(value, path, true));
    const json* digest = find(value, "digest");
    if (digest == nullptr) {
        return field_error(member_path(path, "digest"), "missing");
    }
    ASSIGN_OR_RETURN(d.digest, digest_at(*digest, member_path(path, "digest")));
    ASSIGN_OR_RETURN(d.size, size_at(value, path));
    if (const json* platform = find(value, "platform")) {
        const std::string at = member_path(path, "platform");
        RETURN_IF_ERROR(require_object(*platform, at));
        ASSIGN_OR_RETURN(d.platform, platform_fields(*platform, at));
    }
    ASSIGN_OR_RETURN(d.urls, string_array(value, path, "urls", false, 64));
    ASSIGN_OR_RETURN(d.annotations, annotations_at(value, path));
    return d;
}

Status check_schema_version(const json& doc) {
    const json* version = find(doc, "schemaVersion");
    if (version == nullptr) {
        return field_error("schemaVersion", "missing");
    }
    if (!version->is_number_integer()) {
        return wrong_type("schemaVersion", "an integer", *version);
    }
    if (version->get<int64_t>() == 1) {
        return field_error("schemaVersion",
                           "1 is docker's deprecated manifest schema 1, which is not supported; "
                           "a registry serves schema 2 to a client that asks for it");
    }
    if (version->get<int64_t>() != 2) {
        return field_error("schemaVersion", fmt::format("{} is not 2", version->dump()));
    }
    return ok_status();
}

bool is_manifest_type(std::string_view type) {
    return type == media_type::kOciManifest || type == media_type::kDockerManifest;
}

bool is_index_type(std::string_view type) {
    return type == media_type::kOciIndex || type == media_type::kDockerManifestList;
}

// A blob that we read into memory whole: its descriptor may not announce more than a document's
// limit, so that a fetch can stop at that size.
Status check_document_size(const Descriptor& d, std::string_view path) {
    if (d.size > kMaxDocumentBytes) {
        return field_error(member_path(path, "size"),
                           fmt::format("{} bytes is past the limit of {} MiB for a document",
                                       d.size, kMaxDocumentBytes >> 20));
    }
    return ok_status();
}

Result<ImageIndex> read_index(const json& doc) {
    RETURN_IF_ERROR(require_object(doc, ""));
    RETURN_IF_ERROR(check_schema_version(doc));
    ImageIndex index;
    ASSIGN_OR_RETURN(index.media_type, media_type_at(doc, "", false));
    if (!index.media_type.empty() && !is_index_type(index.media_type)) {
        return field_error("mediaType",
                           fmt::format("{} is not an image index's", quote(index.media_type)));
    }
    for (std::string_view key : {"config", "layers"}) {
        if (find(doc, key) != nullptr) {
            return field_error(key,
                               "an index has no such field: a document that reads as both an "
                               "index and a manifest is refused");
        }
    }
    ASSIGN_OR_RETURN(const json* manifests, array_at(doc, "", "manifests", true, kMaxIndexEntries));
    for (std::size_t i = 0; i < manifests->size(); ++i) {
        const std::string at = item_path("manifests", i);
        ASSIGN_OR_RETURN(Descriptor d, read_descriptor((*manifests)[i], at));
        if (is_manifest_type(d.media_type) || is_index_type(d.media_type)) {
            RETURN_IF_ERROR(check_document_size(d, at));
        }
        index.manifests.push_back(std::move(d));
    }
    ASSIGN_OR_RETURN(index.annotations, annotations_at(doc, ""));
    return index;
}

Result<ImageManifest> read_manifest(const json& doc) {
    RETURN_IF_ERROR(require_object(doc, ""));
    RETURN_IF_ERROR(check_schema_version(doc));
    ImageManifest manifest;
    ASSIGN_OR_RETURN(manifest.media_type, media_type_at(doc, "", false));
    if (!manifest.media_type.empty() && !is_manifest_type(manifest.media_type)) {
        return field_error(
            "mediaType", fmt::format("{} is not an image manifest's", quote(manifest.media_type)));
    }
    if (find(doc, "manifests") != nullptr) {
        return field_error("manifests",
                           "a manifest has no such field: a document that reads as both an "
                           "index and a manifest is refused");
    }
    const json* config = find(doc, "config");
    if (config == nullptr) {
        return field_error("config", "missing");
    }
    ASSIGN_OR_RETURN(manifest.config, read_descriptor(*config, "config"));
    if (manifest.config.media_type != media_type::kOciConfig &&
        manifest.config.media_type != media_type::kDockerConfig) {
        return field_error("config.mediaType",
                           fmt::format("{} is not an image config's: this is not a container "
                                       "image (an OCI artifact?)",
                                       quote(manifest.config.media_type)));
    }
    RETURN_IF_ERROR(check_document_size(manifest.config, "config"));
    ASSIGN_OR_RETURN(const json* layers, array_at(doc, "", "layers", true, kMaxLayers));
    for (std::size_t i = 0; i < layers->size(); ++i) {
        const std::string at = item_path("layers", i);
        ASSIGN_OR_RETURN(Descriptor d, read_descriptor((*layers)[i], at));
        auto compression = layer_compression(d.media_type);
        if (!compression) {
            return std::move(compression).error().wrap(member_path(at, "mediaType"));
        }
        if (!d.urls.empty()) {
            return field_error(member_path(at, "urls"),
                               "a layer fetched from somewhere other than the registry is not "
                               "supported");
        }
        manifest.layers.push_back(std::move(d));
    }
    ASSIGN_OR_RETURN(manifest.annotations, annotations_at(doc, ""));
    return manifest;
}

bool is_digits(std::string_view text, std::size_t n) {
    if (text.size() != n) {
        return false;
    }
    for (char c : text) {
        if (c < '0' || c > '9') {
            return false;
        }
    }
    return true;
}

int number(std::string_view digits) {
    int value = 0;
    for (char c : digits) {
        value = value * 10 + (c - '0');
    }
    return value;
}

// RFC 3339 §5.6 date-time: 2024-05-01T12:00:00Z, with optional fractional seconds and an offset
// instead of Z. Field ranges are checked; the day against the month is not.
bool is_rfc3339(std::string_view t) {
    if (t.size() < 20 || t.size() > 64) {
        return false;
    }
    if (!is_digits(t.substr(0, 4), 4) || t[4] != '-' || !is_digits(t.substr(5, 2), 2) ||
        t[7] != '-' || !is_digits(t.substr(8, 2), 2) || (t[10] != 'T' && t[10] != 't') ||
        !is_digits(t.substr(11, 2), 2) || t[13] != ':' || !is_digits(t.substr(14, 2), 2) ||
        t[16] != ':' || !is_digits(t.substr(17, 2), 2)) {
        return false;
    }
    const int month = number(t.substr(5, 2));
    const int day = number(t.substr(8, 2));
    if (month < 1 || month > 12 || day < 1 || day > 31 || number(t.substr(11, 2)) > 23 ||
        number(t.substr(14, 2)) > 59 || number(t.substr(17, 2)) > 60) {
        return false;
    }
    std::string_view rest = t.substr(19);
    if (rest.starts_with('.')) {
        std::size_t n = 1;
        while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') {
            ++n;
        }
        if (n == 1) {
            return false;
        }
        rest.remove_prefix(n);
    }
    if (rest == "Z" || rest == "z") {
        return true;
    }
    return rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') &&
           is_digits(rest.substr(1, 2), 2) && rest[3] == ':' && is_digits(rest.substr(4, 2), 2) &&
           number(rest.substr(1, 2)) <= 23 && number(rest.substr(4, 2)) <= 59;
}

// A string that becomes part of an exec (argv, environment, working directory, user): C strings
// end at NUL, so one inside would silently cut what the image asked for.
Status check_exec_string(std::string_view text, std::string_view at) {
    if (has_nul(text)) {
        return field_error(at, "holds a NUL byte");
    }
    return ok_status();
}

Result<ContainerConfig> read_container_config(const json& object, std::string_view path) {
    constexpr std::size_t kMaxArgs = 4096;
    ContainerConfig c;
    ASSIGN_OR_RETURN(c.env, string_array(object, path, "Env", false, kMaxArgs, true));
    for (std::size_t i = 0; i < c.env.size(); ++i) {
        const std::string at = item_path(member_path(path, "Env"), i);
        RETURN_IF_ERROR(check_exec_string(c.env[i], at));
        const std::size_t eq = c.env[i].find('=');
        if (eq == std::string::npos || eq == 0) {
            return field_error(at, fmt::format("{} is not NAME=value", quote(c.env[i])));
        }
    }
    ASSIGN_OR_RETURN(c.entrypoint, string_array(object, path, "Entrypoint", false, kMaxArgs, true));
    ASSIGN_OR_RETURN(c.cmd, string_array(object, path, "Cmd", false, kMaxArgs, true));
    for (const auto& [key, list] :
         {std::pair<std::string_view, const std::vector<std::string>*>{"Entrypoint", &c.entrypoint},
          {"Cmd", &c.cmd}}) {
        for (std::size_t i = 0; i < list->size(); ++i) {
            RETURN_IF_ERROR(check_exec_string((*list)[i], item_path(member_path(path, key), i)));
        }
    }
    ASSIGN_OR_RETURN(std::optional<std::string> dir,
                     optional_string(object, path, "WorkingDir", true));
    c.working_dir = dir.value_or("");
    RETURN_IF_ERROR(check_exec_string(c.working_dir, member_path(path, "WorkingDir")));
    ASSIGN_OR_RETURN(std::optional<std::string> user, optional_string(object, path, "User", true));
    c.user = user.value_or("");
    RETURN_IF_ERROR(check_exec_string(c.user, member_path(path, "User")));
    return c;
}

Result<ImageConfig> read_config(const json& doc) {
    RETURN_IF_ERROR(require_object(doc, ""));
    ImageConfig config;
    ASSIGN_OR_RETURN(config.platform, platform_fields(doc, ""));
    ASSIGN_OR_RETURN(config.created, optional_string(doc, "", "created", true));
    if (config.created && !is_rfc3339(*config.created)) {
        return field_error("created",
                           fmt::format("{} is not an RFC 3339 date-time", quote(*config.created)));
    }
    const json* rootfs = find(doc, "rootfs");
    if (rootfs == nullptr) {
        return field_error("rootfs", "missing");
    }
    RETURN_IF_ERROR(require_object(*rootfs, "rootfs"));
    ASSIGN_OR_RETURN(std::string type, required_string(*rootfs, "rootfs", "type"));
    if (type != "layers") {
        return field_error("rootfs.type", fmt::format("{} is not \"layers\"", quote(type)));
    }
    ASSIGN_OR_RETURN(const json* diff_ids,
                     array_at(*rootfs, "rootfs", "diff_ids", true, kMaxLayers));
    for (std::size_t i = 0; i < diff_ids->size(); ++i) {
        ASSIGN_OR_RETURN(Digest d, digest_at((*diff_ids)[i], item_path("rootfs.diff_ids", i)));
        config.diff_ids.push_back(std::move(d));
    }
    if (const json* container = find(doc, "config", true)) {
        RETURN_IF_ERROR(require_object(*container, "config"));
        ASSIGN_OR_RETURN(config.config, read_container_config(*container, "config"));
    }
    return config;
}

template <class T>
Result<T> in_document(std::string_view what, Result<T> result) {
    if (!result) {
        return std::move(result).error().wrap(what);
    }
    return result;
}

// A path inside an archive as manifest.json names it: relative and without "." or "..", so that
// it can only name an entry of the archive itself.
Status check_archive_path(std::string_view path, std::string_view at) {
    constexpr std::size_t kMaxPath = 4096;
    if (path.empty()) {
        return field_error(at, "empty");
    }
    if (path.size() > kMaxPath || has_nul(path) || path.front() == '/') {
        return field_error(
            at, fmt::format("{} is not a relative path inside the archive", quote(path)));
    }
    for (std::size_t start = 0; start <= path.size();) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) {
            end = path.size();
        }
        const std::string_view part = path.substr(start, end - start);
        if (part.empty() || part == "." || part == "..") {
            return field_error(at, fmt::format("{} is not a clean relative path (an empty, \".\" "
                                               "or \"..\" component)",
                                               quote(path)));
        }
        start = end + 1;
    }
    return ok_status();
}

Result<std::vector<DockerArchiveImage>> read_docker_archive_manifest(const json& doc) {
    if (!doc.is_array()) {
        return wrong_type("document", "an array", doc);
    }
    if (doc.empty()) {
        return invalid("document: no image listed");
    }
    if (doc.size() > kMaxIndexEntries) {
        return Error{Errc::kResourceExhausted,
                     fmt::format("document: {} images is past the limit of {}", doc.size(),
                                 kMaxIndexEntries)};
    }
    std::vector<DockerArchiveImage> out;
    for (std::size_t i = 0; i < doc.size(); ++i) {
        const std::string at = item_path("", i);
        RETURN_IF_ERROR(require_object(doc[i], at));
        DockerArchiveImage image;
        ASSIGN_OR_RETURN(image.config, required_string(doc[i], at, "Config"));
        RETURN_IF_ERROR(check_archive_path(image.config, member_path(at, "Config")));
        ASSIGN_OR_RETURN(image.repo_tags,
                         string_array(doc[i], at, "RepoTags", false, kMaxIndexEntries, true));
        for (std::size_t t = 0; t < image.repo_tags.size(); ++t) {
            if (auto ref = parse_reference(image.repo_tags[t]); !ref) {
                return std::move(ref).error().wrap(item_path(member_path(at, "RepoTags"), t));
            }
        }
        ASSIGN_OR_RETURN(image.layers, string_array(doc[i], at, "Layers", true, kMaxLayers));
        for (std::size_t l = 0; l < image.layers.size(); ++l) {
            RETURN_IF_ERROR(
                check_archive_path(image.layers[l], item_path(member_path(at, "Layers"), l)));
        }
        out.push_back(std::move(image));
    }
    return out;
}

std::string_view normalize_architecture(std::string_view arch) {
    if (arch == "x86_64" || arch == "x86-64") {
        return "amd64";
    }
    if (arch == "aarch64") {
        return "arm64";
    }
    return arch;
}

// The variant an image without one is built for: the architecture's baseline.
std::string_view effective_variant(std::string_view arch, std::string_view variant) {
    if (!variant.empty()) {
        return variant;
    }
    if (arch == "amd64") {
        return "v1";
    }
    if (arch == "arm64") {
        return "v8";
    }
    if (arch == "arm") {
        return "v7";
    }
    return "";
}

// The media type a Content-Type header names, without parameters or spaces; empty when it names
// no manifest type (application/json, say), which then tells us nothing.
std::string_view manifest_content_type(std::string_view content_type) {
    std::string_view type = content_type.substr(0, content_type.find(';'));
    while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) {
        type.remove_prefix(1);
    }
    while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) {
        type.remove_suffix(1);
    }
    if (is_manifest_type(type) || is_index_type(type)) {
        return type;
    }
    return {};
}

}  // namespace

std::string Platform::str() const {
    std::string out = os + "/" + architecture;
    if (!variant.empty()) {
        out += "/" + variant;
    }
    return out;
}

Platform host_platform() {
#if defined(__x86_64__)
    return Platform{.os = "linux", .architecture = "amd64"};
#elif defined(__aarch64__)
    return Platform{.os = "linux", .architecture = "arm64", .variant = "v8"};
#else
    // No image is built for a platform we have not named; selection then fails and lists what
    // the index offers.
    return Platform{.os = "linux", .architecture = "unknown"};
#endif
}

bool platform_matches(const Platform& offered, const Platform& wanted) {
    const std::string_view arch = normalize_architecture(offered.architecture);
    if (offered.os != wanted.os || arch != normalize_architecture(wanted.architecture)) {
        return false;
    }
    return effective_variant(arch, offered.variant) == effective_variant(arch, wanted.variant);
}

Result<LayerCompression> layer_compression(std::string_view type) {
    if (type == media_type::kOciLayer) {
        return LayerCompression::kNone;
    }
    if (type == media_type::kOciLayerGzip || type == media_type::kDockerLayerGzip) {
        return LayerCompression::kGzip;
    }
    if (type == media_type::kOciLayerZstd) {
        return LayerCompression::kZstd;
    }
    if (type.find(".foreign.") != std::string_view::npos ||
        type.find(".nondistributable.") != std::string_view::npos) {
        return invalid(
            fmt::format("{} is a layer fetched from elsewhere than the registry, "
                        "which is not supported",
                        quote(type)));
    }
    return invalid(
        fmt::format("{} is not a layer type we unpack (OCI tar, tar+gzip or "
                    "tar+zstd, or docker's tar.gzip)",
                    quote(type)));
}

Result<ImageIndex> parse_image_index(std::string_view text) {
    ASSIGN_OR_RETURN(json doc, in_document("image index", parse_json(text)));
    return in_document("image index", read_index(doc));
}

Result<ImageManifest> parse_image_manifest(std::string_view text) {
    ASSIGN_OR_RETURN(json doc, in_document("image manifest", parse_json(text)));
    return in_document("image manifest", read_manifest(doc));
}

Result<ImageConfig> parse_image_config(std::string_view text) {
    ASSIGN_OR_RETURN(json doc, in_document("image config", parse_json(text)));
    return in_document("image config", read_config(doc));
}

Result<ManifestDocument> parse_manifest_document(std::string_view text,
                                                 std::string_view content_type) {
    constexpr std::string_view kWhat = "manifest";
    ASSIGN_OR_RETURN(json doc, in_document(kWhat, parse_json(text)));
    RETURN_IF_ERROR(in_document(kWhat, require_object(doc, "")));
    RETURN_IF_ERROR(in_document(kWhat, check_schema_version(doc)));
    ASSIGN_OR_RETURN(std::string declared, in_document(kWhat, media_type_at(doc, "", false)));
    const std::string_view header = manifest_content_type(content_type);
    if (!declared.empty() && !header.empty() && declared != header) {
        return invalid(fmt::format("manifest: mediaType {} disagrees with the Content-Type {}",
                                   quote(declared), quote(header)));
    }
    std::string_view type = header;
    if (!declared.empty()) {
        type = declared;
    }
    if (type.empty()) {
        const bool index_fields = find(doc, "manifests") != nullptr;
        const bool manifest_fields =
            find(doc, "config") != nullptr || find(doc, "layers") != nullptr;
        if (index_fields && manifest_fields) {
            return invalid(
                "manifest: has both \"manifests\" and \"config\" or \"layers\": a document that "
                "reads as both an index and a manifest is refused");
        }
        if (!index_fields && !manifest_fields) {
            return invalid(R"(manifest: no mediaType, and neither "manifests" nor "layers")");
        }
        type = index_fields ? media_type::kOciIndex : media_type::kOciManifest;
    }
    if (is_index_type(type)) {
        ASSIGN_OR_RETURN(ImageIndex index, in_document("image index", read_index(doc)));
        return ManifestDocument(std::move(index));
    }
    if (is_manifest_type(type)) {
        ASSIGN_OR_RETURN(ImageManifest manifest, in_document("image manifest", read_manifest(doc)));
        return ManifestDocument(std::move(manifest));
    }
    return invalid(
        fmt::format("manifest: mediaType {} is neither an image index nor an image "
                    "manifest{}",
                    quote(type),
                    type.starts_with("application/vnd.docker.distribution.manifest.v1")
                        ? " (docker schema 1 is not supported)"
                        : ""));
}

Result<Descriptor> select_manifest(const ImageIndex& index, const Platform& wanted) {
    std::string offered;
    std::size_t candidates = 0;
    for (const Descriptor& d : index.manifests) {
        if (!is_manifest_type(d.media_type)) {
            continue;
        }
        ++candidates;
        if (d.platform && platform_matches(*d.platform, wanted)) {
            return d;
        }
        if (!offered.empty()) {
            offered += ", ";
        }
        offered += d.platform ? quote(d.platform->str()) : std::string("(no platform)");
    }
    if (candidates == 0) {
        return Error{
            Errc::kNotFound,
            fmt::format("no manifest for {}: the index lists no image manifest", wanted.str())};
    }
    return Error{Errc::kNotFound,
                 fmt::format("no manifest for {} among {}: {}", wanted.str(), candidates, offered)};
}

Status check_manifest_config(const ImageManifest& manifest, const ImageConfig& config) {
    if (manifest.layers.size() != config.diff_ids.size()) {
        return invalid(fmt::format("the manifest has {} layers but the config {} diff_ids",
                                   manifest.layers.size(), config.diff_ids.size()));
    }
    return ok_status();
}

Status parse_oci_layout(std::string_view text) {
    ASSIGN_OR_RETURN(json doc, in_document("oci-layout", parse_json(text)));
    RETURN_IF_ERROR(in_document("oci-layout", require_object(doc, "")));
    ASSIGN_OR_RETURN(std::string version,
                     in_document("oci-layout", required_string(doc, "", "imageLayoutVersion")));
    if (version != "1.0.0") {
        return invalid(
            fmt::format("oci-layout: imageLayoutVersion {} is not supported: only "
                        "\"1.0.0\" is",
                        quote(version)));
    }
    return ok_status();
}

Result<ImageIndex> parse_layout_index(std::string_view text) {
    ASSIGN_OR_RETURN(json doc, in_document("index.json", parse_json(text)));
    ASSIGN_OR_RETURN(ImageIndex index, in_document("index.json", read_index(doc)));
    if (index.media_type == media_type::kDockerManifestList) {
        return invalid(
            fmt::format("index.json: mediaType {} is a docker manifest list; an OCI "
                        "layout's index is an OCI image index",
                        quote(index.media_type)));
    }
    return index;
}

Result<std::vector<DockerArchiveImage>> parse_docker_archive_manifest(std::string_view text) {
    ASSIGN_OR_RETURN(json doc, in_document("manifest.json", parse_json(text)));
    return in_document("manifest.json", read_docker_archive_manifest(doc));
}

}  // namespace stockade::images
