// Checkpoint directories without torch: staged writes, manifests, the newest
// valid checkpoint, keep-last-k, and a process killed in the middle of saves.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "flashtrain/trainer/checkpoint/checkpoint_folder.h"
#include "flashtrain/trainer/checkpoint/checksum.h"
#include "flashtrain/trainer/checkpoint/remove_tree.h"
#include "flashtrain/trainer/checkpoint/staged_directory.h"
#include "scratch_dir.h"

namespace flashtrain::trainer {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::ScratchDir;
using testing::write_file;

// A checkpoint with one file whose contents name the step.
void save_step(const CheckpointFolder& folder, std::int64_t step, std::size_t bytes = 64) {
  StagedDirectory out(folder.path_for_step(step), "checkpoint");
  out.write_file("payload.bin", std::string(bytes, char('a' + step % 26)));
  out.commit({{"step", step}});
}

std::vector<std::int64_t> steps_of(const std::vector<CheckpointEntry>& entries) {
  std::vector<std::int64_t> steps;
  for (const CheckpointEntry& e : entries) steps.push_back(e.step);
  return steps;
}

TEST(Checksum, MatchesPublishedFnv1a64Values) {
  Fnv1a64 empty;
  EXPECT_EQ(empty.hex(), "cbf29ce484222325");
  Fnv1a64 a;
  a.update("a", 1);
  EXPECT_EQ(a.hex(), "af63dc4c8601ec8c");
  Fnv1a64 split;  // chunking does not change the value
  split.update("foo", 3);
  split.update("bar", 3);
  Fnv1a64 whole;
  whole.update("foobar", 6);
  EXPECT_EQ(split.value(), whole.value());
  EXPECT_EQ(whole.hex(), "85944171f73967e8");
}

TEST(StagedDirectory, AppearsOnlyWhenCommitted) {
  ScratchDir dir;
  const fs::path target = dir / "step_00000001";
  {
    StagedDirectory out(target, "checkpoint");
    out.write_file("a.txt", "hello");
    EXPECT_FALSE(fs::exists(target));
    EXPECT_TRUE(fs::exists(out.staging_path() / "a.txt"));
    EXPECT_TRUE(is_staging_name(out.staging_path().filename().string()));
  }  // destroyed without commit: nothing remains
  EXPECT_TRUE(fs::is_empty(dir.path()));

  StagedDirectory out(target, "checkpoint");
  StagedDirectory::File big = out.create_file("b.bin");
  big.write("xy", 2);
  big.write("z", 1);
  big.close();
  out.write_file("a.txt", "hello");
  out.commit({{"step", 1}});
  EXPECT_EQ(read_file(target / "a.txt"), "hello");
  EXPECT_EQ(read_file(target / "b.bin"), "xyz");
  const nlohmann::json manifest = verify_manifest(target);
  EXPECT_EQ(manifest["kind"], "checkpoint");
  EXPECT_EQ(manifest["info"]["step"], 1);
  EXPECT_EQ(manifest["files"]["b.bin"]["bytes"], 3);
  EXPECT_EQ(manifest["files"]["a.txt"]["fnv1a64"], fnv1a64_of_file((target / "a.txt").string()));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1)
      << "the staging directory is gone after the rename";
}

TEST(StagedDirectory, NeverReplacesAnExistingDirectory) {
  ScratchDir dir;
  write_file(dir / "out" / "precious.txt", "keep me");
  EXPECT_THROW(StagedDirectory(dir / "out", "export"), std::runtime_error);
  // Also when the target appears while staging (another process).
  StagedDirectory out(dir / "late", "export");
  out.write_file("a", "new");
  write_file(dir / "late" / "precious.txt", "keep me too");
  EXPECT_THROW(out.commit(), std::runtime_error);
  EXPECT_EQ(read_file(dir / "out" / "precious.txt"), "keep me");
  EXPECT_EQ(read_file(dir / "late" / "precious.txt"), "keep me too");
}

TEST(StagedDirectory, RefusesToCommitWithAFileLeftOpen) {
  ScratchDir dir;
  StagedDirectory out(dir / "x", "export");
  StagedDirectory::File file = out.create_file("a");
  file.write("1", 1);
  EXPECT_THROW(out.commit(), std::logic_error);
  EXPECT_THROW(out.create_file("manifest.json"), std::invalid_argument);
  EXPECT_THROW(out.create_file("sub/file"), std::invalid_argument);
}

TEST(VerifyManifest, DetectsMissingTruncatedAndCorruptFiles) {
  ScratchDir dir;
  const CheckpointFolder folder(dir.path());
  save_step(folder, 1);
  const fs::path ckpt = folder.path_for_step(1);
  EXPECT_NO_THROW(verify_manifest(ckpt));

  std::string bytes = read_file(ckpt / "payload.bin");
  bytes[10] ^= 1;  // same size, different contents
  write_file(ckpt / "payload.bin", bytes);
  EXPECT_NO_THROW(verify_manifest(ckpt, /*check_contents=*/false));
  try {
    verify_manifest(ckpt);
    ADD_FAILURE() << "a flipped bit went unnoticed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
  write_file(ckpt / "payload.bin", "short");
  EXPECT_THROW(verify_manifest(ckpt, false), std::runtime_error);
  fs::remove(ckpt / "payload.bin");
  EXPECT_THROW(verify_manifest(ckpt, false), std::runtime_error);
  fs::remove(ckpt / kManifestFile);
  EXPECT_THROW(verify_manifest(ckpt, false), std::runtime_error);
}

// A path that is no directory at all is said to be so, not taken for an
// interrupted save.
TEST(VerifyManifest, NamesAMissingPathAndAFile) {
  ScratchDir dir;
  const auto message = [](const fs::path& path) {
    try {
      verify_manifest(path);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(dir.path() / "missing").find("missing does not exist"), std::string::npos);
  write_file(dir.path() / "file", "x");
  EXPECT_NE(message(dir.path() / "file").find("is not a directory"), std::string::npos);
  fs::create_directories(dir.path() / "empty");
  EXPECT_NE(message(dir.path() / "empty").find("has no manifest.json"), std::string::npos);
}

TEST(CheckpointFolder, NamesAndListsCheckpointsByStep) {
  ScratchDir dir;
  const CheckpointFolder folder(dir / "ckpt");
  EXPECT_TRUE(folder.complete().empty()) << "a missing folder has no checkpoints";
  EXPECT_EQ(folder.path_for_step(100).filename(), "step_00000100");
  EXPECT_EQ(checkpoint_step("step_00000100"), 100);
  EXPECT_EQ(checkpoint_step("step_123456789012"), 123456789012);
  EXPECT_FALSE(checkpoint_step("step_"));
  EXPECT_FALSE(checkpoint_step("step_12.invalid-0"));
  EXPECT_FALSE(checkpoint_step(".step_12.tmp-1-0"));
  for (std::int64_t step : {30, 10, 20}) save_step(folder, step);
  fs::create_directories(folder.path_for_step(40));  // never finished: no manifest
  write_file(folder.path() / "step_00000050", "a file, not a directory");
  EXPECT_EQ(steps_of(folder.complete()), (std::vector<std::int64_t>{10, 20, 30}));
  EXPECT_EQ(steps_of(folder.unfinished()), (std::vector<std::int64_t>{40}));
}

TEST(CheckpointFolder, LatestValidSkipsUnfinishedAndCorruptCheckpoints) {
  ScratchDir dir;
  const CheckpointFolder folder(dir.path());
  EXPECT_FALSE(folder.latest_valid());
  save_step(folder, 10);
  save_step(folder, 20);
  save_step(folder, 30);
  // step 30 corrupt, step 40 a save that never finished.
  write_file(folder.path_for_step(30) / "payload.bin", std::string(64, '?'));
  fs::create_directories(folder.path_for_step(40));
  write_file(folder.path_for_step(40) / "payload.bin", "partial");

  std::vector<SkippedCheckpoint> skipped;
  const auto latest = folder.latest_valid(&skipped);
  ASSERT_TRUE(latest);
  EXPECT_EQ(latest->step, 20);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].entry.step, 40);
  EXPECT_NE(skipped[0].reason.find("never finished"), std::string::npos) << skipped[0].reason;
  EXPECT_EQ(skipped[1].entry.step, 30);
  EXPECT_NE(skipped[1].reason.find("corrupt"), std::string::npos) << skipped[1].reason;

  // Set aside, they no longer count, and nothing of them is lost.
  const fs::path aside = folder.set_aside(skipped[1].entry.path);
  EXPECT_EQ(aside.filename(), "step_00000030.invalid-0");
  EXPECT_EQ(read_file(aside / "payload.bin"), std::string(64, '?'));
  fs::create_directories(folder.path_for_step(30));
  EXPECT_EQ(folder.set_aside(folder.path_for_step(30)).filename(), "step_00000030.invalid-1");
  EXPECT_EQ(steps_of(folder.complete()), (std::vector<std::int64_t>{10, 20}));
}

TEST(CheckpointFolder, PruneKeepsTheNewestK) {
  ScratchDir dir;
  const CheckpointFolder folder(dir.path());
  for (std::int64_t step = 1; step <= 5; ++step) save_step(folder, step);
  fs::create_directories(folder.path_for_step(0));  // unfinished ones are not counted nor removed
  EXPECT_TRUE(folder.prune(0).empty()) << "0 keeps all";
  EXPECT_EQ(folder.prune(2).size(), 3u);
  EXPECT_EQ(steps_of(folder.complete()), (std::vector<std::int64_t>{4, 5}));
  EXPECT_TRUE(fs::exists(folder.path_for_step(0)));
  EXPECT_TRUE(folder.prune(2).empty());
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_FALSE(is_staging_name(entry.path().filename().string())) << entry.path();
}

TEST(CheckpointFolder, RemovesStagingDirectoriesOfDeadProcessesOnly) {
  ScratchDir dir;
  const CheckpointFolder folder(dir.path());
  // A child that exits at once: its pid is dead once reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const fs::path dead = dir / (".step_00000007.tmp-" + std::to_string(child) + "-0");
  const fs::path alive = dir / (".step_00000008.tmp-" + std::to_string(::getpid()) + "-0");
  write_file(dead / "model.safetensors", "half");
  write_file(alive / "model.safetensors", "in progress");
  const auto removed = folder.remove_stale_staging();
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], dead);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));
}

// A process that saves checkpoints in a loop is killed with SIGKILL at
// several moments; each time the newest checkpoint that remains verifies.
TEST(CheckpointFolder, SigkillDuringSavesLeavesAValidCheckpoint) {
  for (int round = 0; round < 4; ++round) {
    ScratchDir dir;
    const CheckpointFolder folder(dir.path());
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      // Large enough files that the kill lands mid-save most of the time.
      for (std::int64_t step = 1;; ++step) {
        save_step(folder, step, std::size_t(1) << 20);
        folder.prune(2);
      }
    }
    // Once the first save is done, kill at a different moment each round.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (folder.complete().empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(3 + 11 * round));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status));

    std::vector<SkippedCheckpoint> skipped;
    const auto latest = folder.latest_valid(&skipped);
    ASSERT_TRUE(latest) << "round " << round << ": no valid checkpoint after the kill";
    // A kill never leaves a step_N that is unfinished or fails its checksums.
    EXPECT_TRUE(skipped.empty()) << skipped.front().entry.path << ": " << skipped.front().reason;
    EXPECT_NO_THROW(verify_manifest(latest->path));
    EXPECT_EQ(read_file(latest->path / "payload.bin"), std::string(1 << 20, char('a' + latest->step % 26)));
    folder.remove_stale_staging();
    for (const auto& entry : fs::directory_iterator(dir.path()))
      EXPECT_TRUE(checkpoint_step(entry.path().filename().string())) << "left behind: " << entry.path();
  }
}

}  // namespace
}  // namespace flashtrain::trainer

namespace flashtrain::trainer {
namespace {

TEST(RemoveTree, RemovesNestedDirectoriesButNotWhatSymlinksPointTo) {
  testing::ScratchDir dir;
  testing::write_file(dir / "keep" / "precious.txt", "keep");
  testing::write_file(dir / "doomed" / "a" / "b" / "c.txt", "x");
  std::filesystem::create_directory_symlink(dir / "keep", dir / "doomed" / "a" / "link");
  remove_tree(dir / "doomed");
  EXPECT_FALSE(std::filesystem::exists(dir / "doomed"));
  EXPECT_EQ(testing::read_file(dir / "keep" / "precious.txt"), "keep");
  EXPECT_NO_THROW(remove_tree(dir / "never-existed"));
  testing::write_file(dir / "file.txt", "x");
  remove_tree(dir / "file.txt");
  EXPECT_FALSE(std::filesystem::exists(dir / "file.txt"));
}

}  // namespace
}  // namespace flashtrain::trainer
