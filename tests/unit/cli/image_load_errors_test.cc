// `airlock image load` of an archive whose image has no name: exit 64 naming --name.

#include <stdlib.h>

#include <fstream>

#include <gtest/gtest.h>

#include "common/exit_codes.h"
#include "common/sha256.h"
#include "image/oci/image_archive.h"
#include "support/tar_builder.h"
#include "support/scratch.h"

namespace airlock::image::oci {
namespace {

TEST(ImageLoadErrors, UnnamedImageIsAUsageErrorNamingTheNameFlag) {
  TempDir scratch = airlock::test::scratchDir("airlock-load-");
  const std::string root = scratch.path();
  const std::string manifest =
      R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":)"
      R"("application/vnd.oci.image.config.v1+json","digest":"sha256:)" + std::string(64, 'a') + R"(","size":2},)"
      R"("layers":[]})";
  const std::string hex = sha256Hex(manifest);
  const std::string index = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[)"
                            R"({"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:)" + hex +
                            R"(","size":)" + std::to_string(manifest.size()) + "}]}";
  std::string tar = test::makeTar({{"oci-layout", 'f', R"({"imageLayoutVersion":"1.0.0"})"},
                                   {"index.json", 'f', index},
                                   {"blobs/", 'd', ""},
                                   {"blobs/sha256/", 'd', ""},
                                   {"blobs/sha256/" + hex, 'f', manifest}});
  const std::string path = root + "/unnamed.tar";
  std::ofstream(path, std::ios::binary) << tar;
  auto r = loadImageArchive(ImageStore(root + "/store"), path, {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, exit_code::kUsage) << r.error().message;
  EXPECT_NE(r.error().message.find("--name"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace airlock::image::oci
