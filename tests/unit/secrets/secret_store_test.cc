#include "secrets/secret_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

#include "common/fd.h"
#include "common/file_lock.h"
#include "common/paths.h"
#include "secrets/file_backend.h"

namespace airlock::secrets {
namespace {

class FixedClock final : public Clock {
 public:
  std::chrono::system_clock::time_point now() const override { return at; }
  std::chrono::system_clock::time_point at{std::chrono::seconds(1'800'000'000)};
};

/// A backend that forgets nothing and can be told it lost a value.
class MemoryBackend final : public SecretBackend {
 public:
  std::string id() const override { return "secret-service"; }
  std::string describe() const override { return "memory"; }
  Result<> store(const std::string& name, const std::string& value) override {
    values[name] = value;
    return {};
  }
  Result<std::optional<std::string>> lookup(const std::string& name) override {
    auto it = values.find(name);
    return it == values.end() ? std::optional<std::string>() : std::optional<std::string>(it->second);
  }
  Result<> erase(const std::string& name) override {
    values.erase(name);
    return {};
  }
  std::map<std::string, std::string> values;
};

class SecretStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = TempDir::create("/tmp", "airlock-secrets-");
    ASSERT_TRUE(dir);
    dir_.emplace(std::move(*dir));
    file_.emplace(dir_->path() + "/data/secrets");
  }
  SecretStore fileStore() { return SecretStore(index(), {{"file", &*file_}}, *file_, clock_); }
  std::string index() const { return dir_->path() + "/data/secrets.json"; }
  mode_t modeOf(const std::string& path) const {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }
  std::optional<TempDir> dir_;
  std::optional<FileBackend> file_;
  FixedClock clock_;
  std::string note_;
};

TEST(SecretName, ALetterThenLettersDigitsAndAFewMarks) {
  for (const char* ok : {"a", "github-token", "ANTHROPIC_API_KEY", "claude.oauth"})
    EXPECT_TRUE(isValidSecretName(ok)) << ok;
  EXPECT_TRUE(isValidSecretName(std::string(64, 'x')));
  for (const char* bad : {"", "1abc", "-x", ".hidden", "a/b", "../x", "a b", "a\nb", "ä", "a.tmp-999999"})
    EXPECT_FALSE(isValidSecretName(bad)) << bad;
  EXPECT_FALSE(isValidSecretName(std::string(65, 'x')));
}

TEST_F(SecretStoreTest, AStoredValueComesBackAndOnlyTheIndexKnowsAboutIt) {
  auto store = fileStore();
  ASSERT_TRUE(store.set("github-token", "ghp_secretvalue", "stdin", 1'900'000'000, note_));
  auto value = store.get("github-token");
  ASSERT_TRUE(value) << value.error().message;
  EXPECT_EQ(value->value_or(""), "ghp_secretvalue");
  // The value is one 0600 file in a 0700 directory; the index never holds it.
  EXPECT_EQ(modeOf(dir_->path() + "/data/secrets"), 0700u);
  EXPECT_EQ(modeOf(dir_->path() + "/data/secrets/github-token"), 0600u);
  EXPECT_EQ(modeOf(index()), 0600u);
  auto text = readFile(index());
  ASSERT_TRUE(text);
  EXPECT_EQ(text->find("ghp_secretvalue"), std::string::npos) << *text;
  auto list = store.list();
  ASSERT_TRUE(list);
  ASSERT_EQ(list->size(), 1u);
  EXPECT_EQ((*list)[0].name, "github-token");
  EXPECT_EQ((*list)[0].backend, "file");
  EXPECT_EQ((*list)[0].source, "stdin");
  EXPECT_EQ((*list)[0].expiresAt, 1'900'000'000);
  EXPECT_EQ((*list)[0].lastUsedAt, 1'800'000'000) << "get() records the use";
}

TEST_F(SecretStoreTest, AnUnknownNameIsNoValueAndRemovingItIsFalse) {
  auto store = fileStore();
  auto value = store.get("nothing");
  ASSERT_TRUE(value);
  EXPECT_FALSE(*value);
  auto removed = store.remove("nothing", note_);
  ASSERT_TRUE(removed);
  EXPECT_FALSE(*removed);
}

TEST_F(SecretStoreTest, RemoveTakesTheValueAndTheEntry) {
  auto store = fileStore();
  ASSERT_TRUE(store.set("k", "v", "stdin", std::nullopt, note_));
  auto removed = store.remove("k", note_);
  ASSERT_TRUE(removed);
  EXPECT_TRUE(*removed);
  EXPECT_FALSE(pathExists(dir_->path() + "/data/secrets/k"));
  EXPECT_TRUE(store.list()->empty());
}

TEST_F(SecretStoreTest, BadNamesEmptyAndHugeValuesAreRefused) {
  auto store = fileStore();
  EXPECT_FALSE(store.set("../escape", "v", "stdin", std::nullopt, note_));
  EXPECT_FALSE(store.set("ok", "", "stdin", std::nullopt, note_));
  EXPECT_FALSE(store.set("ok", std::string(kMaxSecretBytes + 1, 'x'), "stdin", std::nullopt, note_));
  EXPECT_TRUE(store.set("ok", std::string(kMaxSecretBytes, 'x'), "stdin", std::nullopt, note_));
  EXPECT_FALSE(pathExists(dir_->path() + "/escape"));
}

TEST_F(SecretStoreTest, AFileStoreOthersCanReadIsRefusedWithTheChmod) {
  auto store = fileStore();
  ASSERT_TRUE(store.set("k", "v", "stdin", std::nullopt, note_));
  ASSERT_EQ(::chmod((dir_->path() + "/data/secrets/k").c_str(), 0644), 0);
  auto value = store.get("k");
  ASSERT_FALSE(value);
  EXPECT_NE(value.error().message.find("chmod 600"), std::string::npos) << value.error().message;
  ASSERT_EQ(::chmod((dir_->path() + "/data/secrets").c_str(), 0755), 0);
  auto again = store.set("k", "w", "stdin", std::nullopt, note_);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("chmod 700"), std::string::npos) << again.error().message;
}

TEST_F(SecretStoreTest, ASecretInAStoreThatIsNotReachableNowSaysSo) {
  MemoryBackend service;
  {
    SecretStore withService(index(), {{"file", &*file_}, {"secret-service", &service}}, service, clock_);
    ASSERT_TRUE(withService.set("token", "t0k", "stdin", std::nullopt, note_));
  }
  EXPECT_TRUE(service.values.contains("token"));
  EXPECT_FALSE(pathExists(dir_->path() + "/data/secrets/token")) << "the value went to the Secret Service only";
  auto value = fileStore().get("token");  // no session bus now
  ASSERT_FALSE(value);
  EXPECT_NE(value.error().message.find("not reachable now"), std::string::npos) << value.error().message;
  EXPECT_EQ(value.error().code, exit_code::kHostNotReady) << "a keyring out of reach is the host's state, not a bug";
  // Setting it again here works; the note says where the old value stays.
  ASSERT_TRUE(fileStore().set("token", "rotated", "stdin", std::nullopt, note_));
  EXPECT_NE(note_.find("stays in the secret-service store"), std::string::npos) << note_;
  EXPECT_NE(note_.find("`secret-tool clear airlock-secret token`"), std::string::npos) << note_;
  EXPECT_EQ(fileStore().get("token")->value_or(""), "rotated");
  // And an entry of an unreachable store can be removed, with the same note.
  {
    SecretStore withService(index(), {{"file", &*file_}, {"secret-service", &service}}, service, clock_);
    ASSERT_TRUE(withService.set("other", "o", "stdin", std::nullopt, note_));
  }
  auto removed = fileStore().remove("other", note_);
  ASSERT_TRUE(removed) << removed.error().message;
  EXPECT_TRUE(*removed);
  EXPECT_NE(note_.find("stays in the secret-service store"), std::string::npos) << note_;
  EXPECT_NE(note_.find("`secret-tool clear airlock-secret other`"), std::string::npos) << note_;
}

TEST_F(SecretStoreTest, SettingAgainMovesTheValueToThePreferredStore) {
  MemoryBackend service;
  ASSERT_TRUE(fileStore().set("token", "old", "stdin", std::nullopt, note_));
  SecretStore withService(index(), {{"file", &*file_}, {"secret-service", &service}}, service, clock_);
  ASSERT_TRUE(withService.set("token", "new", "stdin", std::nullopt, note_));
  EXPECT_EQ(service.values["token"], "new");
  EXPECT_FALSE(pathExists(dir_->path() + "/data/secrets/token")) << "the old copy stayed in the file store";
  EXPECT_EQ(withService.get("token")->value_or(""), "new");
}

TEST_F(SecretStoreTest, AValueTheBackendLostIsAnErrorNamingTheFix) {
  MemoryBackend service;
  SecretStore store(index(), {{"secret-service", &service}}, service, clock_);
  ASSERT_TRUE(store.set("token", "t", "stdin", std::nullopt, note_));
  service.values.clear();  // removed in the keyring manager
  auto value = store.get("token");
  ASSERT_FALSE(value);
  EXPECT_NE(value.error().message.find("airlock secret set token"), std::string::npos) << value.error().message;
}

TEST_F(SecretStoreTest, AnIndexWithWrongTypesOrAFifoIsRefusedNotFatal) {
  ASSERT_TRUE(makeDirs(dir_->path() + "/data", 0700));
  ASSERT_TRUE(writeFileAtomic(index(), R"({"secrets":{"a":{"backend":5}}})", 0600));
  auto list = fileStore().list();
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().message.find("move it away"), std::string::npos) << list.error().message;
  ASSERT_EQ(::unlink(index().c_str()), 0);
  ASSERT_EQ(::mkfifo(index().c_str(), 0600), 0);
  list = fileStore().list();  // would block forever on a FIFO opened for reading
  ASSERT_FALSE(list);
  EXPECT_NE(list.error().message.find("not a regular file"), std::string::npos) << list.error().message;
}

TEST_F(SecretStoreTest, ADataDirectoryOthersCouldChangeIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root: gives a directory to another uid";
  ASSERT_TRUE(makeDirs(dir_->path() + "/shared"));
  ASSERT_EQ(::chmod((dir_->path() + "/shared").c_str(), 0777), 0);
  ASSERT_EQ(::chown((dir_->path() + "/shared").c_str(), 4243, 4243), 0);
  FileBackend planted(dir_->path() + "/shared/airlock/secrets");
  SecretStore store(dir_->path() + "/shared/airlock/secrets.json", {{"file", &planted}}, planted, clock_);
  auto set = store.set("k", "v", "stdin", std::nullopt, note_);
  ASSERT_FALSE(set);
  EXPECT_NE(set.error().message.find("belongs to uid 4243"), std::string::npos) << set.error().message;
  EXPECT_FALSE(pathExists(dir_->path() + "/shared/airlock"));
}

// A directory of the user's own that everybody may write to lets anybody
// rename the store away and plant another: refused, naming the fix.
TEST_F(SecretStoreTest, ADataDirectoryOfYoursThatOthersMayWriteIsRefused) {
  const std::string open = dir_->path() + "/open";
  ASSERT_TRUE(makeDirs(open));
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  FileBackend planted(open + "/airlock/secrets");
  SecretStore store(open + "/airlock/secrets.json", {{"file", &planted}}, planted, clock_);
  auto set = store.set("k", "v", "stdin", std::nullopt, note_);
  ASSERT_FALSE(set);
  EXPECT_NE(set.error().message.find("writable by others (mode 777)"), std::string::npos) << set.error().message;
  EXPECT_NE(set.error().message.find("chmod go-w " + open), std::string::npos) << set.error().message;
  EXPECT_FALSE(pathExists(open + "/airlock"));
  ASSERT_EQ(::chmod(open.c_str(), 01777), 0);  // sticky, as /tmp: nobody renames what is yours
  EXPECT_TRUE(store.set("k", "v", "stdin", std::nullopt, note_));
}

// /home -> var/home (Fedora Atomic), a ~/.local/share moved elsewhere: a
// link of the user's or root's leads on, checked where it leads; a link
// into a directory others may change, or another user's link, is refused.
TEST_F(SecretStoreTest, ASymbolicLinkOfYoursInTheChainIsFollowedAndWhereItLeadsChecked) {
  const std::string real = dir_->path() + "/var/home";
  ASSERT_TRUE(makeDirs(real + "/u/.local/share"));
  ASSERT_EQ(::symlink("var/home", (dir_->path() + "/home").c_str()), 0);
  const std::string data = dir_->path() + "/home/u/.local/share";
  FileBackend linked(data + "/airlock/secrets");
  SecretStore store(data + "/airlock/secrets.json", {{"file", &linked}}, linked, clock_);
  ASSERT_TRUE(store.set("k", "v", "stdin", std::nullopt, note_)) << "a link of yours was refused";
  EXPECT_EQ(store.get("k")->value_or(""), "v");
  EXPECT_TRUE(pathExists(real + "/u/.local/share/airlock/secrets/k"));
  // Where it leads is writable by others: refused, naming that directory.
  ASSERT_EQ(::chmod((real + "/u").c_str(), 0777), 0);
  auto refused = store.set("k", "w", "stdin", std::nullopt, note_);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("/u is writable by others"), std::string::npos)
      << refused.error().message;
  ASSERT_EQ(::chmod((real + "/u").c_str(), 0755), 0);
  // A link that leads nowhere.
  ASSERT_EQ(::symlink("gone", (dir_->path() + "/nowhere").c_str()), 0);
  FileBackend dangling(dir_->path() + "/nowhere/airlock/secrets");
  SecretStore lost(dir_->path() + "/nowhere/airlock/secrets.json", {{"file", &dangling}}, dangling, clock_);
  auto nowhere = lost.set("k", "v", "stdin", std::nullopt, note_);
  ASSERT_FALSE(nowhere);
  EXPECT_NE(nowhere.error().message.find("leads nowhere"), std::string::npos) << nowhere.error().message;
  if (::geteuid() != 0) return;
  // Another user's link: refused whatever it leads to.
  ASSERT_EQ(::lchown((dir_->path() + "/home").c_str(), 4243, 4243), 0);
  auto foreign = store.set("k", "w", "stdin", std::nullopt, note_);
  ASSERT_FALSE(foreign);
  EXPECT_NE(foreign.error().message.find("belongs to uid 4243"), std::string::npos) << foreign.error().message;
}

TEST_F(SecretStoreTest, AnIndexThatIsNotAirlocksIsRefusedNotOverwritten) {
  ASSERT_TRUE(makeDirs(dir_->path() + "/data"));
  ASSERT_TRUE(writeFileAtomic(index(), "not json", 0600));
  auto store = fileStore();
  auto set = store.set("k", "v", "stdin", std::nullopt, note_);
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().code, exit_code::kHostNotReady);
  EXPECT_EQ(readFile(index()).value_or(""), "not json");
}

}  // namespace
}  // namespace airlock::secrets
