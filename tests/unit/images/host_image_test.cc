#include <gtest/gtest.h>

#include "images/image.h"
#include "tests/testing/matchers.h"

namespace stockade::images {
namespace {

using testing::HasErrc;
using testing::IsOk;

TEST(HostImageTest, GeneratesAMinimalEtcForTheSandboxUser) {
    sandbox::Identity id;
    id.sandbox_uid = 1000;
    id.sandbox_gid = 1001;
    id.user_name = "stockade";
    EXPECT_EQ(make_passwd(id, "/tmp"),
              "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\n"
              "stockade:x:1000:1001:Stockade sandbox user:/tmp:/bin/bash\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    EXPECT_EQ(make_group(id), "root:x:0:\nstockade:x:1001:\nnogroup:x:65534:\n");
    EXPECT_NE(make_hosts("box").find("127.0.1.1\tbox\n"), std::string::npos);
}

TEST(HostImageTest, NeverCarriesHostSecretsOrHomes) {
    sandbox::SandboxSpec spec;
    ASSERT_THAT(apply_image("host", spec), IsOk());
    for (const auto& bind : spec.binds) {
        for (const char* forbidden :
             {"/etc/shadow", "/etc/gshadow", "/root", "/home", "/var", "/run"}) {
            EXPECT_NE(bind.source, forbidden);
            EXPECT_NE(bind.source.rfind(std::string(forbidden) + "/", 0), 0U) << bind.source;
        }
        EXPECT_FALSE(bind.writable) << bind.source;
    }
    bool has_usr = false;
    for (const auto& bind : spec.binds) {
        has_usr = has_usr || bind.target == "/usr";
    }
    EXPECT_TRUE(has_usr);
}

TEST(HostImageTest, UnknownImageNamesTheKnownOnes) {
    sandbox::SandboxSpec spec;
    auto st = apply_image("alpine", spec);
    ASSERT_THAT(st, HasErrc(Errc::kNotFound));
    EXPECT_NE(st.error().message.find("known images: host"), std::string::npos);
}

}  // namespace
}  // namespace stockade::images
