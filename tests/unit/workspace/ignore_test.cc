#include "workspace/ignore.h"

#include <gtest/gtest.h>

namespace airlock::workspace {
namespace {

TEST(Glob, StarAndQuestionStopAtSlash) {
  EXPECT_TRUE(globMatch("*.o", "main.o"));
  EXPECT_FALSE(globMatch("*.o", "dir/main.o"));
  EXPECT_TRUE(globMatch("a?c", "abc"));
  EXPECT_FALSE(globMatch("a?c", "a/c"));
}

TEST(Glob, DoubleStar) {
  EXPECT_TRUE(globMatch("**/foo", "foo"));
  EXPECT_TRUE(globMatch("**/foo", "a/b/foo"));
  EXPECT_TRUE(globMatch("a/**/b", "a/b"));
  EXPECT_TRUE(globMatch("a/**/b", "a/x/y/b"));
  EXPECT_FALSE(globMatch("a/**/b", "ab"));
  EXPECT_TRUE(globMatch("abc/**", "abc/x/y"));
  EXPECT_FALSE(globMatch("abc/**", "abc"));
  EXPECT_TRUE(globMatch("a**b", "axxb"));   // other ** = *
  EXPECT_FALSE(globMatch("a**b", "ax/xb"));
}

TEST(Glob, ClassesAndEscapes) {
  EXPECT_TRUE(globMatch("[a-c]x", "bx"));
  EXPECT_FALSE(globMatch("[!a-c]x", "bx"));
  EXPECT_TRUE(globMatch("[^a-c]x", "dx"));
  EXPECT_TRUE(globMatch("[]]", "]"));
  EXPECT_TRUE(globMatch("\\*", "*"));
  EXPECT_FALSE(globMatch("\\*", "a"));
  EXPECT_TRUE(globMatch("[abc", "[abc"));  // unterminated class is literal
}

TEST(Glob, HostilePatternIsFast) {
  std::string pat(200, '*');
  pat += "b";
  std::string text(3000, 'a');
  EXPECT_FALSE(globMatch(pat, text));
  EXPECT_FALSE(globMatch("*a*a*a*a*a*a*a*a*a*a*a*b", std::string(4000, 'a')));
}

TEST(IgnoreLine, Syntax) {
  IgnorePattern p;
  EXPECT_FALSE(parseIgnoreLine("", p));
  EXPECT_FALSE(parseIgnoreLine("# comment", p));
  ASSERT_TRUE(parseIgnoreLine("\\#notcomment", p));
  EXPECT_TRUE(globMatch(p.glob, "#notcomment"));
  ASSERT_TRUE(parseIgnoreLine("\\!bang", p));
  EXPECT_FALSE(p.negate);
  EXPECT_TRUE(globMatch(p.glob, "!bang"));
  ASSERT_TRUE(parseIgnoreLine("trail   ", p));
  EXPECT_EQ(p.glob, "trail");
  ASSERT_TRUE(parseIgnoreLine("trail\\ ", p));
  EXPECT_TRUE(globMatch(p.glob, "trail "));
  ASSERT_TRUE(parseIgnoreLine("build/", p));
  EXPECT_TRUE(p.dirOnly);
  EXPECT_FALSE(p.anchored);
  ASSERT_TRUE(parseIgnoreLine("/top", p));
  EXPECT_TRUE(p.anchored);
  EXPECT_EQ(p.glob, "top");
}

TEST(IgnoreRules, GitignoreSemantics) {
  IgnoreRules r;
  r.addLines("*.log\n!keep.log\nbuild/\n/root-only\ndocs/*.tmp\n");
  EXPECT_EQ(r.match("a.log", false), IgnoreVerdict::Ignored);
  EXPECT_EQ(r.match("x/y/a.log", false), IgnoreVerdict::Ignored);
  EXPECT_EQ(r.match("keep.log", false), IgnoreVerdict::Included);
  EXPECT_EQ(r.match("build", true), IgnoreVerdict::Ignored);
  EXPECT_EQ(r.match("build", false), IgnoreVerdict::Included);  // dir-only
  EXPECT_EQ(r.match("sub/build/out.o", false), IgnoreVerdict::Ignored);
  EXPECT_EQ(r.match("root-only", false), IgnoreVerdict::Ignored);
  EXPECT_EQ(r.match("sub/root-only", false), IgnoreVerdict::Included);
  EXPECT_EQ(r.match("docs/a.tmp", false), IgnoreVerdict::Ignored);
  EXPECT_EQ(r.match("docs/sub/a.tmp", false), IgnoreVerdict::Included);
}

TEST(IgnoreRules, CannotReincludeBelowExcludedDir) {
  IgnoreRules r;
  r.addLines("vendor/\n!vendor/keep.c\n");
  EXPECT_EQ(r.match("vendor/keep.c", false), IgnoreVerdict::Ignored);
}

TEST(IgnoreRules, SecretsAlwaysExcludedAndNotNegatable) {
  IgnoreRules r;
  r.addLines("!.env\n!*.pem\n!.ssh/\n!**\n");
  r.addPattern("!id_rsa");
  for (const char* p : {".env", ".env.local", "cert.pem", "tls.key", "a/b/id_rsa", "id_ed25519.pub", ".ssh/config",
                        "x/.aws/credentials", ".config/gcloud/adc.json", "home/.config/gh/hosts.yml",
                        "credentials.json", ".git-credentials", ".netrc", ".npmrc", ".pypirc", ".docker/config.json",
                        ".kube/config", ".gnupg/pubring.kbx", "prod.tfstate", "prod.tfstate.backup", "x.tfvars",
                        ".terraform/x", "age-key.txt", "s.age", "k.p12", "k.pfx", "k.jks", "a.keystore",
                        "a.truststore", ".pgpass", ".vault-token", ".yarnrc.yml", ".azure/x", ".gcp/x", ".gcloud/x",
                        "id_ecdsa"})
    EXPECT_EQ(r.match(p, false), IgnoreVerdict::Secret) << p;
  EXPECT_EQ(r.match(".ssh", true), IgnoreVerdict::Secret);
  EXPECT_EQ(r.match(".envrc", false), IgnoreVerdict::Included);
  EXPECT_EQ(r.match("src/key.c", false), IgnoreVerdict::Included);
}

// Issue 12 item 11: `.ENV` and `.Env.local` reached the guest (the match was case-sensitive).
TEST(IgnoreRules, CaseVariantsOfSecretNamesAreSecrets) {
  IgnoreRules r;
  for (const char* p : {".ENV", ".Env.local", "sub/.ENV.PRODUCTION", "ID_RSA", "Id_Ed25519", "CERT.PEM", "Tls.Key",
                        ".SSH/config", "x/.Aws/credentials", "Credentials.JSON", ".NETRC", "HOME/.Kube/Config"})
    EXPECT_EQ(r.match(p, false), IgnoreVerdict::Secret) << p;
}

// Issue 12 item 11: near names and credential files of common tools reached the guest.
TEST(IgnoreRules, NearNamesAndToolCredentialFilesAreSecrets) {
  IgnoreRules r;
  for (const char* p :
       {".env-local", ".env_prod", ".env~", ".env.local~", "prod.env", "config/staging.env", ".envs/.production/.django",
        "putty.ppk", "secring.gpg", ".gnupg2/private-keys-v1.d/ab.key", "server.key.orig", "server.key.2024",
        ".my.cnf", ".s3cfg", ".dockercfg", ".cargo/credentials", ".cargo/credentials.toml", "home/.gem/credentials",
        "auth.json", "app/auth.json", ".terraformrc", "terraform.rc", ".terraform.d/credentials.tfrc.json",
        "service-account.json", "gcp/service-account-prod.json", "my_service_account_key.json",
        "proj-firebase-adminsdk-x1.json", "application_default_credentials.json", "kubeconfig", "kubeconfig.yaml",
        "prod.kubeconfig", ".bash_history", ".zsh_history", ".python_history", ".psql_history", ".mysql_history",
        ".node_repl_history", ".sqlite_history", ".lesshst", ".zhistory", ".local/share/fish/fish_history",
        ".viminfo", ".authinfo.gpg", ".boto", ".htpasswd", ".m2/settings.xml", ".gradle/gradle.properties",
        ".config/hub", "rclone.conf", ".cache/huggingface/token", "AuthKey_ABC.p8", "krb5.keytab", "vault.kdbx",
        "wallet.dat", ".oci/config", ".kaggle/kaggle.json", ".password-store/x.gpg", ".netrc.bak",
        "credentials.json.orig", ".pgpass.old", ".id_rsa.swp", "k.jceks"})
    EXPECT_EQ(r.match(p, false), IgnoreVerdict::Secret) << p;
  // Ordinary project files stay in.
  for (const char* p : {"src/environment.ts", "src/env.rs", "env/bin/python", "docs/history.md", "src/auth.go",
                        "src/key.c", "keys.go", "config.toml", "settings.xml", "gradle.properties", ".envrc",
                        "src/service.json", "kube/deploy.yaml", "README.md", "history", "backup.bak", "~"})
    EXPECT_EQ(r.match(p, false), IgnoreVerdict::Included) << p;
}

// a06: these names reached the guest: more tools' secret files, names with trailing spaces or dots, numbered backups.
TEST(IgnoreRules, SecretNamesWithTrailingDotsSpacesAndNumberedBackupsAreSecrets) {
  IgnoreRules r;
  for (const char* p :
       {"token.json", ".dev.vars", ".flaskenv", ".streamlit/secrets.toml", "secrets.yaml", "secrets.yml",
        "secrets.json", "secrets.toml", ".claude/settings.local.json", "git-credentials", ".config/git/credentials",
        ".gh_token", "deploy.token", "env.local", "app/Secrets.YAML", ".env ", "config/.env.", ".env. .", ".ssh./id",
        ".netrc.1", ".npmrc.bak2", "id_rsa.orig3", "credentials.json.bak10", ".pgpass.2"})
    EXPECT_EQ(r.match(p, false), IgnoreVerdict::Secret) << p;
  for (const char* p : {"secrets.md", "src/token.go", "tokens.json", "env.local.example.md", "notes.1", "v1.2.3",
                        "lib.so.1", ".", "..."})
    EXPECT_EQ(r.match(p, false), IgnoreVerdict::Included) << p;
}

// `--exclude '!.env'` cannot re-include a secret; it must say so, naming the rule that wins.
TEST(IgnoreRules, NegatingASecretWarnsNamingTheRule) {
  IgnoreRules r;
  r.addPattern("!.env");
  r.addPattern("!*.pem");
  r.addPattern("!.ssh/config");
  r.addPattern("!src/");
  r.addPattern("!*");
  ASSERT_EQ(r.warnings().size(), 3u);
  EXPECT_EQ(r.warnings()[0],
            "'!.env' does nothing: the built-in secret rule '.env' always excludes it and cannot be negated");
  EXPECT_NE(r.warnings()[1].find("rule '*.pem'"), std::string::npos) << r.warnings()[1];
  EXPECT_NE(r.warnings()[2].find("rule '.ssh/'"), std::string::npos) << r.warnings()[2];
  EXPECT_EQ(r.match(".env", false), IgnoreVerdict::Secret);
}

TEST(IgnoreRules, AirlockConfigExcluded) {
  IgnoreRules r;
  r.addLines("!.airlock.yaml\n");
  EXPECT_EQ(r.match(".airlock.yaml", false), IgnoreVerdict::Secret);
  EXPECT_EQ(r.match(".airlockignore", false), IgnoreVerdict::Secret);
}

}  // namespace
}  // namespace airlock::workspace

namespace airlock::workspace {
namespace {

TEST(IgnoreRules, SecretBelowIgnoredDirIsStillASecret) {
  IgnoreRules r;
  r.addLines("*\n");
  EXPECT_EQ(r.match("a/b/.env", false), IgnoreVerdict::Secret);  // found by ignore_fuzz
  EXPECT_EQ(r.match("a/b/c.txt", false), IgnoreVerdict::Ignored);
}

}  // namespace
}  // namespace airlock::workspace
