// `image inspect` / `image rm` accept the digest `image ls` shows.

#include <stdlib.h>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "image/oci/image_store.h"
#include "support/scratch.h"

namespace airlock::image::oci {
namespace {

class ImageDigest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = scratch_.path();
    store_ = std::make_unique<ImageStore>(root_);
    ASSERT_TRUE(store_->writeRef({"docker.io/library/busybox:1", a_, 1}));
    ASSERT_TRUE(store_->writeRef({"docker.io/library/busybox:latest", a_, 1}));
    ASSERT_TRUE(store_->writeRef({"docker.io/library/alpine:3", b_, 1}));
  }
  TempDir scratch_ = airlock::test::scratchDir("airlock-digest-");
  std::string root_;
  std::unique_ptr<ImageStore> store_;
  const std::string a_ = "sha256:abcd" + std::string(60, '1');
  const std::string b_ = "sha256:abce" + std::string(60, '2');
};

TEST_F(ImageDigest, ShortAndFullDigestsFindEveryRefOfTheImage) {
  for (const auto& text : std::vector<std::string>{a_, a_.substr(0, 19), a_.substr(7, 12), a_.substr(7)}) {
    auto refs = store_->refsByDigest(text);
    ASSERT_TRUE(refs) << text << ": " << refs.error().message;
    ASSERT_TRUE(*refs) << text;
    ASSERT_EQ((*refs)->size(), 2u) << text;
    for (const auto& r : **refs) EXPECT_EQ(r.manifestDigest, a_);
  }
}

TEST_F(ImageDigest, AmbiguousPrefixNamesTheCandidates) {
  auto refs = store_->refsByDigest("sha256:abc");
  ASSERT_FALSE(refs);
  EXPECT_EQ(refs.error().code, exit_code::kUsage);
  EXPECT_NE(refs.error().message.find(a_), std::string::npos) << refs.error().message;
  EXPECT_NE(refs.error().message.find(b_), std::string::npos) << refs.error().message;
}

TEST_F(ImageDigest, UnknownDigestIsAnErrorAndNamesAreNotDigests) {
  auto missing = store_->refsByDigest("sha256:ffff");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, exit_code::kImage);
  for (const std::string name : {"busybox", "busybox:1", "abcd", "docker.io/library/busybox:latest"}) {
    auto r = store_->refsByDigest(name);
    ASSERT_TRUE(r) << name;
    EXPECT_FALSE(*r) << name << " is a reference, not a digest";
  }
}

TEST_F(ImageDigest, RemoveRefsUntagsEveryReferenceOfTheImage) {
  auto refs = store_->refsByDigest(a_.substr(0, 19));
  ASSERT_TRUE(refs && *refs);
  auto report = store_->removeRefs(**refs);
  ASSERT_TRUE(report) << report.error().message;
  EXPECT_EQ(report->refs.size(), 2u);
  auto again = store_->refsByDigest(a_.substr(0, 19));
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, exit_code::kImage);
  auto other = store_->refsByDigest(b_);
  ASSERT_TRUE(other && *other);
}

}  // namespace
}  // namespace airlock::image::oci
