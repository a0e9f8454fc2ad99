// Every class of scenario error names file:line:column and the key, and says
// what is wrong. Each text below starts on line 1.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "scenario/scenario_loader.h"
#include "scenario/toml_table_reader.h"
#include "tests/scenario/scenario_error_text.h"

namespace tensorwire {
namespace {

std::string error_of(const std::string& text) { return testing::scenario_error_of(text, "t.toml"); }

void expect_error(const std::string& text, std::initializer_list<std::string> parts) {
  const std::string e = error_of(text);
  for (const std::string& part : parts) {
    EXPECT_NE(e.find(part), std::string::npos) << "missing \"" << part << "\" in: " << e;
  }
}

// Line 1-9 of a valid scenario; tests append from line 10 (a tensor's keys).
const std::string kHead = R"([cluster]
nodes = 3
gpus_per_node = 2
[workload]
kind = "tensors"
steps = 3
[[workload.tensor]]
name = "a"
src = 0
)";

const std::string kValid = kHead + "dst = 1\n";

TEST(ScenarioErrors, ProtocolOptionsAreReadFromTheProtocolsOwnTable) {
  expect_error(std::string("[protocol.tf_verbs_zero_copy]\ncontrol_ring_size = 0\n") + kValid,
               {"t.toml:2:", "protocol.tf_verbs_zero_copy.control_ring_size"});
  // Options of the protocol in [protocol] itself: where they belong now.
  expect_error(std::string("[protocol]\ncontrol_ring_size = 8\n") + kValid,
               {"t.toml:2:", "protocol.control_ring_size", "[protocol.tf_verbs_zero_copy]"});
  // A protocol's table is checked whichever protocol runs.
  expect_error(std::string("[protocol.tf_verbs_zero_copy]\nring = 8\n") + kValid,
               {"t.toml:2:", "protocol.tf_verbs_zero_copy.ring: unknown key"});
  expect_error(std::string("[protocol.realm_collective_broadcast]\nx = 1\n") + kValid,
               {"protocol.realm_collective_broadcast", "takes no options"});
  expect_error(std::string("[protocol]\nname = \"mpi\"\n") + kValid,
               {"t.toml:2:8: protocol.name", "not available", "\"tf_verbs_zero_copy\""});
  expect_error(std::string("[protocol]\nname = \"realm_collective_broadcast\"\n") + kValid,
               {"protocol.name", "does not run workload kind \"tensors\""});
}

TEST(ScenarioErrors, TheBaseTextIsValid) {
  EXPECT_NO_THROW(load_scenario_string(kHead + "dst = 1\n", "t.toml"));
}

TEST(ScenarioErrors, TomlSyntaxErrorAtItsPosition) {
  expect_error("name = \"x\"\n[cluster]\nnodes = = 2\n", {"t.toml:3:9: ", "TOML syntax error"});
  expect_error("[cluster]\nnodes = 2\nnodes = 3\n", {"t.toml:3:", "nodes"});
  expect_error("name = \"unterminated\n", {"t.toml:1:", "TOML syntax error"});
}

// issue 18 #10: a TOML syntax error names the key on its line, within its table.
TEST(ScenarioErrors, TomlSyntaxErrorsNameTheKey) {
  // A bad number.
  expect_error("name = \"x\"\n[cluster]\nnodes = 3x\n",
               {"t.toml:3:", ": [cluster] nodes: TOML syntax error: "});
  expect_error("name = \"x\"\n[cluster]\nnodes = = 2\n",
               {"t.toml:3:9: [cluster] nodes: TOML syntax error: "});
  // An unterminated string, before any table.
  expect_error("name = \"unterminated\n[cluster]\nnodes = 2\n",
               {"t.toml:1:", ": name: TOML syntax error: "});
  // In a nested table and in an array of tables.
  expect_error("[protocol.tf_verbs_zero_copy]\n# a comment\n\ncontrol_ring_size = 1.2.3\n",
               {"t.toml:4:", ": [protocol.tf_verbs_zero_copy] control_ring_size: TOML syntax error: "});
  expect_error(kHead + "dst = 'open\n", {"t.toml:10:", ": [[workload.tensor]] dst: TOML syntax error: "});
}

// An error on a header line has no key: the message stays position and description.
TEST(ScenarioErrors, TomlSyntaxErrorInAHeaderNamesNoKey) {
  for (const char* text : {"name = \"x\"\n[cluster\nnodes = 3\n", "nodes = 3\n[clu ster]\n"}) {
    const std::string e = error_of(text);
    EXPECT_EQ(e.rfind("t.toml:2:", 0), 0u) << e;
    const size_t after_position = e.find(": ") + 2;
    EXPECT_EQ(e.find("TOML syntax error: "), after_position) << e;
  }
}

TEST(ScenarioErrors, KeyOnLineReadsTheRawText) {
  const std::string text =
      "top = 1\r\n"
      "[cluster] # the machines\r\n"
      "# nodes = 3\r\n"
      "\"a=b\" = 2\r\n"
      "[[workload.tensor]]\n"
      "  name = \"x = y\"\n"
      "shape = [\n"
      "  1,\n";
  EXPECT_EQ(key_on_line(text, 1), "top");
  EXPECT_EQ(key_on_line(text, 2), "");
  EXPECT_EQ(key_on_line(text, 3), "");
  EXPECT_EQ(key_on_line(text, 4), "[cluster] \"a=b\"");
  EXPECT_EQ(key_on_line(text, 5), "");
  EXPECT_EQ(key_on_line(text, 6), "[[workload.tensor]] name");
  EXPECT_EQ(key_on_line(text, 7), "[[workload.tensor]] shape");
  EXPECT_EQ(key_on_line(text, 8), "");
  EXPECT_EQ(key_on_line(text, 0), "");
  EXPECT_EQ(key_on_line(text, 99), "");
}

TEST(ScenarioErrors, UnknownKeysSuggestTheClosestOne) {
  expect_error("[cluster]\nnic_bandwith = \"100Gbps\"\n",
               {"t.toml:2:1: cluster.nic_bandwith: unknown key (did you mean 'nic_bandwidth'?)"});
  expect_error("sed = 3\n", {"t.toml:1:1: sed: unknown key (did you mean 'seed'?)"});
  expect_error("[clustr]\nnodes = 2\n", {"t.toml:1:", "clustr: unknown key", "'cluster'"});
  expect_error(kHead + "dst = 1\nzzz_unrelated = 1\n",
               {"t.toml:11:1: workload.tensor[0].zzz_unrelated: unknown key (allowed here: name, "
                "src, dst"});
  // A key of the other workload kind is unknown too.
  expect_error(kHead + "dst = 1\n[workload.extra]\n", {"workload.extra: unknown key"});
}

TEST(ScenarioErrors, WrongTypes) {
  expect_error("[cluster]\nnodes = \"2\"\n",
               {"t.toml:2:9: cluster.nodes: expected an integer, found a string"});
  expect_error("[cluster]\nnic_latency = 1500\n",
               {"t.toml:2:15: cluster.nic_latency: expected a string, found an integer"});
  expect_error("cluster = 3\n", {"t.toml:1:11: cluster: expected a table, found an integer"});
  expect_error(kHead + "dst = 1.0\n", {"t.toml:10:7: workload.tensor[0].dst: expected an "
                                       "integer, found a floating-point number"});
  expect_error(kHead + "dst = 1\ndead = \"yes\"\n",
               {"t.toml:11:8: workload.tensor[0].dead: expected true or false"});
  expect_error(kHead + "dst = 1\nshape = 4\n",
               {"t.toml:11:9: workload.tensor[0].shape: expected an array, found an integer"});
  expect_error("[workload]\nkind = \"tensors\"\nsteps = 1\ntensor = { name = \"a\" }\n",
               {"t.toml:4:10: workload.tensor: expected an array of tables"});
}

TEST(ScenarioErrors, OutOfRangeValues) {
  expect_error("[cluster]\nnodes = 1\n",
               {"t.toml:2:9: cluster.nodes: 1 is out of range (allowed 2 to 1024)"});
  expect_error("[cluster]\ngpus_per_node = -1\n", {"t.toml:2:", "cluster.gpus_per_node:"});
  expect_error("[cluster]\nrnr_retry_count = 8\n", {"t.toml:2:19: cluster.rnr_retry_count:"});
  expect_error("[cluster]\nsend_queue_depth = 0\n", {"cluster.send_queue_depth: 0 is out"});
  expect_error("seed = -5\n", {"t.toml:1:8: seed: -5 is out of range"});
  // (The protocol is read once the workload's kind is known: kHead follows.)

  expect_error("[cluster]\nnic_bandwidth = \"1bps\"\n",
               {"t.toml:2:17: cluster.nic_bandwidth: '1bps' is out of range"});
  expect_error("[cluster]\nnic_latency = \"2h\"\n", {"t.toml:2:15: cluster.nic_latency:"});
  expect_error("[cluster]\nnic_latency = \"3601s\"\n",
               {"t.toml:2:15: cluster.nic_latency: '3601s' is too long"});
}

TEST(ScenarioErrors, StepsZeroOrAbsurd) {
  expect_error("[workload]\nkind = \"tensors\"\nsteps = 0\n",
               {"t.toml:3:9: workload.steps: 0 is out of range"});
  expect_error("[workload]\nkind = \"tensors\"\nsteps = 1000000000\n",
               {"t.toml:3:9: workload.steps:", "out of range"});
  std::string many_tensors = "[workload]\nkind = \"tensors\"\nsteps = 100000\n";
  for (int i = 0; i < 20; ++i) {
    many_tensors +=
        "[[workload.tensor]]\nname = \"t" + std::to_string(i) + "\"\nsrc = 0\ndst = 1\n";
  }
  expect_error(many_tensors, {"t.toml:3:9: workload.steps:", "transfers in all"});
}

TEST(ScenarioErrors, BadUnits) {
  expect_error("[cluster]\nnic_bandwidth = \"100Gbs\"\n",
               {"t.toml:2:17: cluster.nic_bandwidth: '100Gbs' is not a bandwidth: unknown unit "
                "'Gbs'"});
  expect_error("[cluster]\npcie_latency = \"1.5 sec\"\n",
               {"t.toml:2:16: cluster.pcie_latency: '1.5 sec' is not a duration"});
  expect_error("[cluster]\nnic_latency = \"-1us\"\n", {"cluster.nic_latency:", "negative"});
  expect_error("[workload]\nkind = \"tensors\"\nsteps = 1\ncompute = \"10\"\n",
               {"t.toml:4:11: workload.compute:", "no unit"});
}

TEST(ScenarioErrors, RanksAndEndpoints) {
  expect_error(kHead + "dst = 0\n",
               {"t.toml:10:7: workload.tensor[0].dst: src and dst are both rank 0"});
  expect_error(kHead + "dst = 3\n",
               {"t.toml:10:7: workload.tensor[0].dst: 3 is out of range (allowed 0 to 2)"});
  expect_error(kHead + "\n", {"t.toml:7:1: workload.tensor[0].dst: missing required key"});
}

TEST(ScenarioErrors, MemoryPlaces) {
  expect_error(kHead + "dst = 1\ndst_memory = \"gpu2\"\n",
               {"t.toml:11:14: workload.tensor[0].dst_memory: 'gpu2' is out of range: nodes "
                "have 2 GPUs"});
  expect_error(kHead + "dst = 1\nsrc_memory = \"device\"\n",
               {"t.toml:11:14: workload.tensor[0].src_memory: unknown memory 'device'"});
  expect_error(kHead + "dst = 1\nsrc_memory = \"gpu\"\n", {"src_memory: 'gpu' is not a GPU"});
  expect_error(
      "[workload]\nkind = \"tensors\"\nsteps = 1\n[[workload.tensor]]\nname = \"a\"\nsrc = 0\n"
      "dst = 1\ndst_memory = \"gpu0\"\n",
      {"t.toml:8:14: workload.tensor[0].dst_memory:", "the cluster has none"});
  expect_error(kHead + "dst = 1\ndtype = \"string\"\ndst_memory = \"gpu0\"\n",
               {"workload.tensor[0].dst_memory: string tensors live in host memory"});
}

TEST(ScenarioErrors, ShapesAndTypes) {
  expect_error(kHead + "dst = 1\nshape = [4, -1]\n",
               {"t.toml:11:13: workload.tensor[0].shape[1]: -1 is out of range"});
  expect_error(kHead + "dst = 1\nshape = [2147483648, 2147483648, 2147483648]\n",
               {"t.toml:11:9: workload.tensor[0].shape: the number of elements overflows"});
  expect_error(kHead + "dst = 1\nshape = [1048576, 1048576]\n",
               {"t.toml:11:9: workload.tensor[0].shape: the tensor is larger than 2 GiB"});
  expect_error(kHead + "dst = 1\nshape = [536870913]\n",  // 2 GiB + 4 bytes of float32
               {"t.toml:11:9: workload.tensor[0].shape: the tensor is larger than 2 GiB"});
  expect_error(kHead + "dst = 1\nshape = [1, \"2\"]\n",
               {"t.toml:11:13: workload.tensor[0].shape[1]: expected an integer"});
  expect_error(kHead + "dst = 1\ndtype = \"float128\"\n",
               {"t.toml:11:9: workload.tensor[0].dtype: unknown data type 'float128'"});
  expect_error(kHead + "dst = 1\nstring_bytes = 4\n",
               {"t.toml:11:16: workload.tensor[0].string_bytes: string_bytes is only for"});
  expect_error(kHead + "dst = 1\ndtype = \"string\"\nstring_bytes = \"2MiB\"\n",
               {"t.toml:12:16: workload.tensor[0].string_bytes:", "too large"});
  expect_error("[workload]\nkind = \"tensors\"\nsteps = 1\n[[workload.tensor]]\nname = \"\"\n",
               {"t.toml:5:8: workload.tensor[0].name: a tensor name is 1 to 512 bytes"});
  // 513 bytes: one more than the wire format's name field holds.
  expect_error("[workload]\nkind = \"tensors\"\nsteps = 1\n[[workload.tensor]]\nname = \"" +
                   std::string(513, 'n') + "\"\n",
               {"t.toml:5:8: workload.tensor[0].name: a tensor name is 1 to 512 bytes"});
}

TEST(ScenarioErrors, DuplicateTensorName) {
  expect_error(kHead + "dst = 1\n[[workload.tensor]]\nname = \"a\"\nsrc = 1\ndst = 0\n",
               {"t.toml:12:8: workload.tensor[1].name: tensor 'a' is already defined by "
                "workload.tensor[0]"});
}

TEST(ScenarioErrors, PayloadModeBoundsTheBytesOfAStep) {
  // 2 GiB per tensor (the most one tensor may be), five of them: 10 GiB in one step.
  std::string text = "[workload]\nkind = \"tensors\"\nsteps = 1\n";
  for (int i = 0; i < 5; ++i) {
    text += "[[workload.tensor]]\nname = \"t" + std::to_string(i) +
            "\"\nsrc = 0\ndst = 1\ndtype = \"uint8\"\nshape = [2147483648]\n";
  }
  expect_error(text, {"t.toml:1:1: workload: step 1 moves 10.00 GiB", "mode = \"timing\""});
  EXPECT_NO_THROW(load_scenario_string("[run]\nmode = \"timing\"\n" + text, "t.toml"));
}

TEST(ScenarioErrors, OrderAndOffsets) {
  expect_error(kHead + "dst = 1\norder = \"whenever\"\n",
               {"t.toml:11:9: workload.tensor[0].order: unknown order 'whenever'"});
  expect_error(kHead + "dst = 1\norder = \"send_first\"\nsend_offset = \"1us\"\n",
               {"t.toml:12:15: workload.tensor[0].send_offset: give either order"});
}

TEST(ScenarioErrors, MetaDataChanges) {
  const std::string head = kHead + "dst = 1\n[[workload.change]]\n";  // change on line 11
  expect_error(head + "step = 2\ntensor = \"b\"\nshape = [1]\n",
               {"t.toml:13:10: workload.change[0].tensor: no [[workload.tensor]] is named 'b'"});
  expect_error(head + "step = 1\ntensor = \"a\"\nshape = [1]\n",
               {"t.toml:12:8: workload.change[0].step: 1 is out of range (allowed 2 to 3)"});
  expect_error(head + "step = 4\ntensor = \"a\"\nshape = [1]\n",
               {"t.toml:12:8: workload.change[0].step: 4 is out of range"});
  expect_error(head + "step = 2\ntensor = \"a\"\n",
               {"t.toml:11:1: workload.change[0]: a change sets at least one of"});
  expect_error(head + "step = 2\ntensor = \"a\"\nstring_bytes = 3\n",
               {"t.toml:14:16: workload.change[0].string_bytes: string_bytes is only for"});
  expect_error(head +
                   "step = 2\ntensor = \"a\"\nshape = [1]\n[[workload.change]]\nstep = 2\n"
                   "tensor = \"a\"\ndead = true\n",
               {"t.toml:16:8: workload.change[1].step: tensor 'a' already has a change at step 2"});
  expect_error(head + "step = 2\ntensor = \"a\"\nshape = [1048576, 1048576]\n",
               {"t.toml:14:9: workload.change[0].shape: the tensor is larger than 2 GiB"});
  expect_error(kHead +
                   "dst = 1\ndst_memory = \"gpu0\"\n[[workload.change]]\nstep = 2\n"
                   "tensor = \"a\"\ndtype = \"string\"\n",
               {"t.toml:15:9: workload.change[0].dtype: string tensors live in host memory"});
  expect_error(head + "step = 2\ntensor = \"a\"\nsize = [1]\n",
               {"t.toml:14:1: workload.change[0].size: unknown key"});
}

TEST(ScenarioErrors, MissingSectionsAndKinds) {
  expect_error("seed = 1\n", {"t.toml:1:1: workload: missing required key at the top level"});
  expect_error("[workload]\nsteps = 1\n", {"t.toml:1:1: workload.kind: missing required key"});
  expect_error("[workload]\nkind = \"allreduce\"\n",
               {"t.toml:2:8: workload.kind: unknown workload kind 'allreduce'"});
  expect_error("[workload]\nkind = \"tensors\"\n",
               {"t.toml:1:1: workload.steps: missing required key in [workload]"});
  expect_error("[workload]\nkind = \"tensors\"\nsteps = 1\n",
               {"t.toml:1:1: workload: a \"tensors\" workload needs at least one"});
  expect_error("[run]\nmode = \"fast\"\n[workload]\nkind = \"tensors\"\nsteps = 1\n",
               {"t.toml:2:8: run.mode: unknown mode 'fast'"});
}

TEST(ScenarioErrors, UnknownProtocol) {
  expect_error("[protocol]\nname = \"mvapich2_rendezvous\"\n" + kValid,
               {"t.toml:2:8: protocol.name: protocol 'mvapich2_rendezvous' is not available",
                "tf_verbs_zero_copy"});
}

TEST(ScenarioErrors, GpuDirectTable) {
  expect_error("[cluster]\nnodes = 2\ngpus_per_node = 2\ngpu_direct = [true]\n",
               {"t.toml:4:14: cluster.gpu_direct: has 1 entries; the cluster has 2 nodes"});
  expect_error("[cluster]\nnodes = 2\ngpus_per_node = 2\ngpu_direct = [true, [true]]\n",
               {"t.toml:4:21: cluster.gpu_direct[1]: has 1 entries; nodes have 2 GPUs"});
  expect_error("[cluster]\nnodes = 2\ngpus_per_node = 2\ngpu_direct = [true, [true, 1]]\n",
               {"t.toml:4:28: cluster.gpu_direct[1][1]: expected true or false"});
  expect_error("[cluster]\ngpu_direct = \"yes\"\n",
               {"t.toml:2:14: cluster.gpu_direct: expected true, false, or an array"});
}

// The parameter-server workload on a 4-node cluster, model from the shipped set.
const std::string kPsHead = R"([cluster]
nodes = 4
gpus_per_node = 1
[workload]
kind = "parameter_server"
model = "vgg16"
steps = 2
)";  // tests append from line 8

TEST(ScenarioErrors, ParameterServerRanks) {
  EXPECT_NO_THROW(load_scenario_string(kPsHead + "ps_ranks = [0]\n", "t.toml"));
  expect_error(kPsHead, {"t.toml:4:1: workload.ps_ranks: missing required key"});
  expect_error(kPsHead + "ps_ranks = []\n", {"t.toml:8:12: workload.ps_ranks: at least one"});
  expect_error(kPsHead + "ps_ranks = [0, 4]\n",
               {"t.toml:8:16: workload.ps_ranks[1]: 4 is out of range (allowed 0 to 3)"});
  expect_error(kPsHead + "ps_ranks = [1, 1]\n",
               {"t.toml:8:16: workload.ps_ranks[1]: rank 1 is listed twice"});
  expect_error(kPsHead + "ps_ranks = [0]\nworker_ranks = [1, 0]\n",
               {"t.toml:9:16: workload.worker_ranks: rank 0 is in ps_ranks too"});
  expect_error(kPsHead + "ps_ranks = [0, 1, 2, 3]\n",
               {"t.toml:8:12: workload.ps_ranks: no rank is left to be a worker"});
  expect_error(kPsHead + "ps_ranks = [0]\nworker_memory = \"gpu1\"\n",
               {"t.toml:9:17: workload.worker_memory: 'gpu1' is out of range"});
  expect_error(kPsHead + "ps_ranks = [0]\nplacement = \"random\"\n",
               {"t.toml:9:13: workload.placement: unknown placement 'random'"});
  expect_error(kPsHead + "ps_ranks = [0]\ntensor = []\n",
               {"t.toml:9:1: workload.tensor: unknown key"});
}

TEST(ScenarioErrors, ParameterServerChanges) {
  expect_error(kPsHead + "ps_ranks = [0]\nmeta_data_change_steps = [2, 3]\n",
               {"t.toml:9:30: workload.meta_data_change_steps[1]: 3 is out of range"});
  expect_error(kPsHead + "ps_ranks = [0]\nmeta_data_change_steps = [2, 2]\n",
               {"workload.meta_data_change_steps[1]: step 2 is listed twice"});
  expect_error(kPsHead + "ps_ranks = [0]\nmeta_data_change_variables = [\"fc9/kernel\"]\n",
               {"t.toml:9:31: workload.meta_data_change_variables[0]: model 'vgg16' has no "
                "variable 'fc9/kernel'"});
}

TEST(ScenarioErrors, ParameterServerTooLargeForPayloadMode) {
  // VGG16 is 553 MB: 2 phases x 9 workers x 553 MB is about 9.3 GiB a step.
  expect_error(
      "[cluster]\nnodes = 10\n[workload]\nkind = \"parameter_server\"\nmodel = \"vgg16\"\n"
      "steps = 1\nps_ranks = [0]\n",
      {"t.toml:3:1: workload: step 1 moves", "mode = \"timing\""});
}

TEST(ScenarioErrors, MissingModelFileNamesEveryPathTried) {
  const std::string e = error_of(
      "[workload]\nkind = \"parameter_server\"\nmodel = \"nosuchnet\"\nsteps = 1\n"
      "ps_ranks = [0]\n");
  EXPECT_NE(e.find("t.toml:3:9: workload.model: model file for 'nosuchnet' not found (tried "),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("models/nosuchnet.toml"), std::string::npos) << e;
  EXPECT_NE(e.find(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios/models/nosuchnet.toml"),
            std::string::npos)
      << e;
  expect_error(
      "[workload]\nkind = \"parameter_server\"\nmodel = \"no/such/file.toml\"\nsteps = 1\n"
      "ps_ranks = [0]\n",
      {"t.toml:3:9: workload.model:", "no/such/file.toml"});
}

TEST(ScenarioErrors, MissingScenarioFileNamesThePath) {
  try {
    load_scenario_file("/nonexistent/dir/s.toml");
    FAIL() << "loaded a missing file";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/s.toml"), std::string::npos);
  }
  try {
    load_scenario_file(std::string(TENSORWIRE_SOURCE_ROOT) + "/scenarios");
    FAIL() << "loaded a directory";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

TEST(ScenarioErrors, NotUtf8IsASyntaxError) {
  expect_error(std::string("name = \"\xff\xfe\"\n"), {"t.toml:1:", "TOML syntax error"});
}

}  // namespace
}  // namespace tensorwire
