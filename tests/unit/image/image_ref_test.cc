#include "image/oci/image_ref.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include <gtest/gtest.h>

#include "image/oci/registry_auth.h"
#include "support/scratch.h"

namespace airlock::image::oci {
namespace {

TEST(ImageRef, ShortNamesAreDockerHubLibrary) {
  auto r = parseImageRef("ubuntu");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->str(), "docker.io/library/ubuntu:latest");
  EXPECT_EQ(r->endpoint(), "registry-1.docker.io");
  EXPECT_EQ(parseImageRef("bitnami/redis:7")->str(), "docker.io/bitnami/redis:7");
  EXPECT_EQ(parseImageRef("index.docker.io/library/busybox")->str(), "docker.io/library/busybox:latest");
}

TEST(ImageRef, RegistryHostsAndDigests) {
  const std::string d = "sha256:" + std::string(64, 'a');
  auto r = parseImageRef("127.0.0.1:5000/team/app@" + d);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->registry, "127.0.0.1:5000");
  EXPECT_EQ(r->repository, "team/app");
  EXPECT_TRUE(r->tag.empty());
  EXPECT_EQ(r->reference(), d);
  EXPECT_EQ(r->name(), "127.0.0.1:5000/team/app@" + d);
  auto g = parseImageRef("ghcr.io/stacklok/brood-box/claude-code:1.2@" + d);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->tag, "1.2");
  EXPECT_EQ(g->reference(), d);
  EXPECT_EQ(parseImageRef("localhost/x")->registry, "localhost");
}

TEST(ImageRef, RefusesMalformed) {
  for (const char* bad : {"", "UPPER/case", "a//b", "x:", "x@sha256:abc", "x@md5:" , "../etc", "a:b:c/d", "x:tag with space"})
    EXPECT_FALSE(parseImageRef(bad)) << bad;
}

TEST(ImageRef, Loopback) {
  EXPECT_TRUE(isLoopbackHost("127.0.0.1:5000"));
  EXPECT_TRUE(isLoopbackHost("localhost"));
  EXPECT_TRUE(isLoopbackHost("[::1]:5000"));
  EXPECT_FALSE(isLoopbackHost("registry.example:5000"));
  EXPECT_FALSE(isLoopbackHost("10.0.0.1"));
}

TEST(RegistryAuth, ParsesBearerChallenge) {
  auto c = parseChallenge(R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull")");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->scheme, "bearer");
  EXPECT_EQ(c->params["realm"], "https://auth.docker.io/token");
  EXPECT_EQ(c->params["service"], "registry.docker.io");
  EXPECT_EQ(c->params["scope"], "repository:library/ubuntu:pull");
  EXPECT_EQ(parseChallenge("Basic realm=\"x\"")->scheme, "basic");
}

TEST(RegistryAuth, ReadsDockerConfigAuths) {
  TempDir scratch = airlock::test::scratchDir("airlock-auth-");
  const std::string& dir = scratch.path();
  FILE* f = fopen((dir + "/config.json").c_str(), "w");
  // "alice:s3cret"
  fputs(R"({"auths":{"registry.example:5000":{"auth":"YWxpY2U6czNjcmV0"},"https://index.docker.io/v1/":{"auth":"Ym9iOnB3"}}})", f);
  fclose(f);
  auto c = lookupCredentials("registry.example:5000", dir);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->username, "alice");
  EXPECT_EQ(c->password, "s3cret");
  EXPECT_EQ(lookupCredentials("docker.io", dir)->username, "bob");
  EXPECT_TRUE(lookupCredentials("other.example", dir)->empty());
  EXPECT_TRUE(lookupCredentials("x", dir + "/missing")->empty());
  std::remove((dir + "/config.json").c_str());
}

TEST(RegistryAuth, AsksTheCredentialHelper) {
  TempDir scratch = airlock::test::scratchDir("airlock-helper-");
  const std::string& dir = scratch.path();
  FILE* f = fopen((dir + "/config.json").c_str(), "w");
  fputs(R"({"credHelpers":{"private.example":"airlocktest"},"credsStore":"airlocktest"})", f);
  fclose(f);
  // The helper protocol: the server URL on stdin, JSON on stdout.
  const std::string helper = dir + "/docker-credential-airlocktest";
  f = fopen(helper.c_str(), "w");
  fputs("#!/bin/sh\nread server\nprintf '{\"ServerURL\":\"%s\",\"Username\":\"u-%s\",\"Secret\":\"tok\"}' "
        "\"$server\" \"$server\"\n", f);
  fclose(f);
  chmod(helper.c_str(), 0755);
  const std::string oldPath = getenv("PATH");
  setenv("PATH", (dir + ":" + oldPath).c_str(), 1);
  auto c = lookupCredentials("private.example", dir);
  auto hub = lookupCredentials("docker.io", dir);  // via credsStore
  setenv("PATH", oldPath.c_str(), 1);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_EQ(c->username, "u-private.example");
  EXPECT_EQ(c->password, "tok");
  ASSERT_TRUE(hub) << hub.error().message;
  EXPECT_EQ(hub->username, "u-https://index.docker.io/v1/");
  std::remove(helper.c_str());
  std::remove((dir + "/config.json").c_str());
}

}  // namespace
}  // namespace airlock::image::oci
