// http_get and config.json by URL, against a server on 127.0.0.1 started by each test: success, redirects,
// HTTP errors, redirect loops, oversize bodies (announced and chunked), timeouts, refused connections.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>

#include "frontends_test_data.hpp"
#include "local_http_server.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/http.hpp"
#include "test_support.hpp"

using namespace preflight;
using preflight::test::HttpRoute;
using preflight::test::LocalHttpServer;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

InputError fetch_error(const std::string& url, const HttpOptions& o = {}) {
  try {
    http_get(url, o);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no error fetching " << url;
  return InputError("", "");
}

std::string qwen3_config() {
  return test::read_file(test::hf_config_path("qwen3-32b"));
}

}  // namespace

TEST(Http, FetchesTheBody) {
  LocalHttpServer server({{"/config.json", {200, qwen3_config()}}});
  EXPECT_EQ(http_get(server.url("/config.json")), qwen3_config());
}

TEST(Http, FollowsRedirects) {
  LocalHttpServer server({{"/old", {301, "", {"Location: /new"}}},
                          {"/new", {302, "", {"Location: /config.json"}}},
                          {"/config.json", {200, "{}"}}});
  EXPECT_EQ(http_get(server.url("/old")), "{}");
  EXPECT_EQ(server.requests(), 3);
}

TEST(Http, HttpErrorsNameTheUrlAndStatus) {
  LocalHttpServer server({{"/gated", {403, "no"}}});
  InputError e = fetch_error(server.url("/missing.json"));
  EXPECT_EQ(e.where(), server.url("/missing.json"));
  EXPECT_EQ(e.detail(), "HTTP 404 Not Found");
  InputError g = fetch_error(server.url("/gated"));
  EXPECT_TRUE(contains(g.detail(), "HTTP 403 Forbidden")) << g.detail();
  EXPECT_TRUE(contains(g.detail(), "gated")) << g.detail();
}

TEST(Http, RedirectLoopStopsAtTheLimit) {
  LocalHttpServer server({{"/loop", {302, "", {"Location: /loop"}}}});
  HttpOptions o;
  o.max_redirects = 4;
  InputError e = fetch_error(server.url("/loop"), o);
  EXPECT_EQ(e.where(), server.url("/loop"));
  EXPECT_TRUE(contains(e.detail(), "more than 4 redirects")) << e.detail();
  EXPECT_EQ(server.requests(), 5);  // the first request and 4 redirects followed
}

TEST(Http, RedirectToAnotherSchemeIsRefused) {
  LocalHttpServer server({{"/file", {302, "", {"Location: file:///etc/passwd"}}}});
  InputError e = fetch_error(server.url("/file"));
  EXPECT_EQ(e.where(), server.url("/file"));
  EXPECT_FALSE(contains(e.detail(), "root:")) << e.detail();
}

TEST(Http, OversizeBodiesAreRefused) {
  std::string big(100'000, 'x');
  LocalHttpServer server({{"/announced", {200, big}}, {"/chunked", {200, big, {}, /*chunked=*/true}}});
  HttpOptions o;
  o.max_bytes = 50'000;
  InputError announced = fetch_error(server.url("/announced"), o);
  EXPECT_TRUE(contains(announced.detail(), "larger than the 48.83 KiB limit")) << announced.detail();
  InputError chunked = fetch_error(server.url("/chunked"), o);
  EXPECT_TRUE(contains(chunked.detail(), "larger than the 48.83 KiB limit")) << chunked.detail();
  // At the limit exactly, it is accepted.
  o.max_bytes = 100'000;
  EXPECT_EQ(http_get(server.url("/chunked"), o).size(), 100'000u);
}

TEST(Http, TimeoutIsAnErrorNotAHang) {
  LocalHttpServer server({{"/slow", {200, "", {}, false, /*hang=*/true}}});
  HttpOptions o;
  o.timeout_ms = 300;
  auto start = std::chrono::steady_clock::now();
  InputError e = fetch_error(server.url("/slow"), o);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(e.where(), server.url("/slow"));
  EXPECT_TRUE(contains(e.detail(), "no complete answer within 0.3 s")) << e.detail();
  EXPECT_LT(seconds, 3.0);
}

TEST(Http, RefusedConnectionAndBadSchemes) {
  std::string url = "http://127.0.0.1:" + std::to_string(test::closed_local_port()) + "/config.json";
  InputError e = fetch_error(url);
  EXPECT_EQ(e.where(), url);
  EXPECT_TRUE(contains(e.detail(), "download failed")) << e.detail();
  InputError ftp = fetch_error("ftp://127.0.0.1/config.json");
  EXPECT_TRUE(contains(ftp.detail(), "only http:// and https://")) << ftp.detail();
  EXPECT_TRUE(is_http_url("HTTPS://huggingface.co/x"));
  EXPECT_FALSE(is_http_url("config.json"));
}

TEST(Http, HuggingFacePageLinksAreReadAsRawFiles) {
  EXPECT_EQ(http_effective_url("https://huggingface.co/Qwen/Qwen3-32B/blob/main/config.json"),
            "https://huggingface.co/Qwen/Qwen3-32B/resolve/main/config.json");
  EXPECT_EQ(http_effective_url("https://huggingface.co/Qwen/Qwen3-32B/resolve/main/config.json"),
            "https://huggingface.co/Qwen/Qwen3-32B/resolve/main/config.json");
  EXPECT_EQ(http_effective_url("http://127.0.0.1:8000/a/b/blob/main/config.json"),
            "http://127.0.0.1:8000/a/b/blob/main/config.json");
}

TEST(HfConfigUrl, LoadsAndReportsBadContentAgainstTheUrl) {
  LocalHttpServer server({{"/Qwen/Qwen3-32B/resolve/main/config.json", {200, qwen3_config()}},
                          {"/broken.json", {200, "{\n\"model_type\": \"llama\",\n\"hidden_size\": }"}},
                          {"/incomplete.json", {200, R"({"model_type": "qwen3", "hidden_size": 5120})"}}});
  analyzer::ModelSpec m = analyzer::load_model(server.url("/Qwen/Qwen3-32B/resolve/main/config.json"));
  EXPECT_EQ(count_parameters(m), 32'762'123'264);
  EXPECT_EQ(m.kv_channels, 128);

  try {
    analyzer::load_model(server.url("/broken.json"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), server.url("/broken.json") + ":3");
    EXPECT_TRUE(contains(e.detail(), "malformed JSON")) << e.detail();
  }
  try {
    analyzer::load_model(server.url("/incomplete.json"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), server.url("/incomplete.json") + ": num_hidden_layers");
  }
  try {
    analyzer::load_model(server.url("/nothing-here.json"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), server.url("/nothing-here.json"));
    EXPECT_EQ(e.detail(), "HTTP 404 Not Found");
  }
}

namespace {

using preflight::test::ScopedEnv;

}  // namespace

TEST(HfHub, RepositoryIdIsReadFromTheEndpointWithTheToken) {
  LocalHttpServer hub(
      {{"/acme/Gated-32B/resolve/main/config.json", {200, qwen3_config(), {}, false, false, "hf_s3cret"}}});
  ScopedEnv endpoint("HF_ENDPOINT", hub.url("/").c_str());  // a trailing '/' as users write it
  ScopedEnv legacy("HUGGING_FACE_HUB_TOKEN", nullptr);
  {
    ScopedEnv token("HF_TOKEN", "hf_s3cret");
    analyzer::ModelSpec m = analyzer::load_model("acme/Gated-32B");
    EXPECT_EQ(count_parameters(m), 32'762'123'264);
    EXPECT_EQ(m.name, "acme/Gated-32B");
    EXPECT_TRUE(contains(hub.last_request(), "GET /acme/Gated-32B/resolve/main/config.json "))
        << hub.last_request();
    // A page link on the mirror is read as the raw file, with the token too.
    m = analyzer::load_model(hub.url("/acme/Gated-32B/blob/main/config.json"));
    EXPECT_EQ(count_parameters(m), 32'762'123'264);
  }
  {
    // huggingface_hub's older variable works as well.
    ScopedEnv token("HF_TOKEN", nullptr);
    ScopedEnv old_token("HUGGING_FACE_HUB_TOKEN", "hf_s3cret");
    EXPECT_EQ(count_parameters(analyzer::load_model("acme/Gated-32B")), 32'762'123'264);
  }
  ScopedEnv token("HF_TOKEN", nullptr);
  try {
    analyzer::load_model("acme/Gated-32B");
    FAIL() << "a gated repository without a token";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), hub.url("/acme/Gated-32B/resolve/main/config.json"));
    EXPECT_TRUE(contains(e.detail(), "HTTP 401")) << e.detail();
    EXPECT_TRUE(contains(e.detail(), "set HF_TOKEN")) << e.detail();
    EXPECT_TRUE(contains(e.detail(), "read as a Hugging Face repository")) << e.detail();
  }
  ScopedEnv wrong("HF_TOKEN", "hf_wrong");
  try {
    analyzer::load_model("acme/Gated-32B");
    FAIL() << "a refused token";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.detail(), "token was refused")) << e.detail();
  }
}

TEST(HfHub, TokenGoesToTheHubOnly) {
  LocalHttpServer other({{"/config.json", {200, qwen3_config()}}});
  LocalHttpServer hub({{"/moved", {302, "", {"Location: " + other.url("/config.json")}}}});
  ScopedEnv endpoint("HF_ENDPOINT", hub.url("").c_str());
  ScopedEnv token("HF_TOKEN", "hf_s3cret");
  // A URL elsewhere is fetched without credentials.
  analyzer::load_model(other.url("/config.json"));
  EXPECT_FALSE(contains(other.last_request(), "Authorization")) << other.last_request();
  // The Hub gets the token; a redirect to another host (here: another port) does not carry it.
  analyzer::load_model(hub.url("/moved"));
  EXPECT_TRUE(contains(hub.last_request(), "Authorization: Bearer hf_s3cret")) << hub.last_request();
  EXPECT_FALSE(contains(other.last_request(), "Authorization")) << other.last_request();
}

TEST(HfHub, PathsAndPresetsAreNotRepositoryIds) {
  LocalHttpServer hub({});
  ScopedEnv endpoint("HF_ENDPOINT", hub.url("").c_str());
  // A preset's repository id stays the preset (no download).
  EXPECT_EQ(analyzer::load_model("meta-llama/Meta-Llama-3-8B").name, "llama3-8b");
  // Paths that are not there stay "no such file", without asking the Hub.
  for (const char* path : {"./ckpt/llama", "ckpt/llama/config.json", "/abs/llama", "a/b/c"}) {
    try {
      analyzer::load_model(path);
      FAIL() << path;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), path);
    }
  }
  EXPECT_EQ(hub.requests(), 0);
}
