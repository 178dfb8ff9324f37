#include "images/stored_image.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <set>

#include "common/host_dir.h"
#include "common/unique_fd.h"
#include "images/image.h"

namespace stockade::images {
namespace {

// What a sandbox's root has of its own, never taken from an image.
const std::set<std::string, std::less<>> kOwnTopLevel = {"tmp", "dev", "proc", "sys"};

// Deeper than this, a directory holding a bind target is bound whole (the bind then needs its
// mount point to exist in the image).
constexpr int kMaxSpliceDepth = 16;

struct Splicer {
    std::vector<std::string> targets;  // of the binds already in the spec
    bool writable = false;
    std::vector<sandbox::Bind> binds{};
    std::vector<sandbox::Symlink> symlinks{};

    // The entries of directory `fd` (at `source` on the host, `target` in the sandbox, "" for
    // the root).
    void add(int fd, const std::string& source, const std::string& target, int depth) {
        for (const DirEntry& entry : list_entries(fd)) {
            if (depth == 0 && kOwnTopLevel.contains(entry.name)) {
                continue;
            }
            const std::string to = target + "/" + entry.name;
            const std::string from = source + "/" + entry.name;
            bool covered = false;
            bool holds = false;
            for (const std::string& t : targets) {
                covered = covered || t == to;
                holds = holds || (t.size() > to.size() && t.starts_with(to) && t[to.size()] == '/');
            }
            if (covered) {
                continue;  // a bind of the spec's takes its place
            }
            if (S_ISLNK(entry.st.st_mode)) {
                std::array<char, 4096> text{};
                const ssize_t n =
                    ::readlinkat(fd, entry.name.c_str(), text.data(), text.size() - 1);
                if (n > 0) {
                    symlinks.push_back(
                        sandbox::Symlink{to, std::string(text.data(), static_cast<size_t>(n))});
                }
            } else if (S_ISDIR(entry.st.st_mode)) {
                if (holds && depth < kMaxSpliceDepth) {
                    const int sub = ::openat(fd, entry.name.c_str(),
                                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                    if (sub >= 0) {
                        const UniqueFd owned(sub);
                        add(sub, from, to, depth + 1);
                        continue;
                    }
                }
                binds.push_back(sandbox::Bind{
                    .source = from, .target = to, .writable = writable, .image = true});
            } else if (S_ISREG(entry.st.st_mode)) {
                binds.push_back(sandbox::Bind{
                    .source = from, .target = to, .writable = writable, .image = true});
            }
            // Nothing else is in a stored tree: the importer skips devices, FIFOs and sockets.
        }
    }
};

}  // namespace

// The binds name their sources by path. No sandbox can change where those paths lead: the
// tree's directory is in the store (0700, its owner's), and a sandbox gets only the contents
// of the entries bound, never a directory that holds one, so it cannot rename, replace or turn
// into a symlink any directory on a path here (a build's steps, which write the tree, no more
// than a session). Symlinks of the tree are recreated inside, never followed on the host.
void add_stored_tree(const HeldTree& tree, bool writable, sandbox::SandboxSpec& spec) {
    Splicer splicer{.targets = {}, .writable = writable};
    for (const sandbox::Bind& bind : spec.binds) {
        splicer.targets.push_back(bind.target);
    }
    splicer.add(tree.dir.fd(), tree.dir.path(), "", 0);
    if (writable) {
        for (const sandbox::Bind& bind : splicer.binds) {
            spec.writable_paths.push_back(bind.target);
        }
    }
    // The host's resolver over the image's placeholder (the importer makes one), as the host
    // image has it.
    splicer.binds.push_back(sandbox::Bind{
        .source = "/etc/resolv.conf", .target = "/etc/resolv.conf", .optional = true});
    spec.binds.insert(spec.binds.begin(), splicer.binds.begin(), splicer.binds.end());
    spec.symlinks.insert(spec.symlinks.end(), splicer.symlinks.begin(), splicer.symlinks.end());
}

Image build_root_image(HostDir dir) {
    return Image{
        .name = "(being built)", .tree = HeldTree{.dir = std::move(dir)}, .build_root = true};
}

Result<Image> load_stored_image(const ImageStore& store, std::string_view ref) {
    ASSIGN_OR_RETURN(StoredImage found, store.find(ref));
    ASSIGN_OR_RETURN(HeldTree tree, store.hold_tree(found.digest));
    return Image{.name = std::string(ref), .tree = std::move(tree)};
}

}  // namespace stockade::images
