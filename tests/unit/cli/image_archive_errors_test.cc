// `airlock image save` errors that are the user's to fix exit 64, not 67.

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "image/oci/image_archive.h"

namespace airlock::image::oci {
namespace {

TEST(ImageSaveErrors, OutputInAMissingDirectoryIsAUsageError) {
  ImageStore store("/nonexistent-store-for-test");
  auto ref = parseImageRef("busybox:1");
  ASSERT_TRUE(ref);
  auto r = saveImage(store, *ref, "/nonexistent/dir/x.tar");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage) << r.error().message;
  EXPECT_NE(r.error().message.find("/nonexistent/dir/x.tar"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("-o"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace airlock::image::oci
