// Schedule files round-trip, and a damaged one is an error naming its line.
#include "model/schedule_file.h"

#include <gtest/gtest.h>

namespace tensorwire::model {
namespace {

ScheduleFile sample() {
  ScheduleFile s;
  s.scenario = "scenarios/quickstart.toml";
  s.seed = 42;
  s.strategy = "random";
  s.outcome = "safety violation";
  for (uint32_t i = 0; i < 70; ++i) s.choices.push_back(i % 3);
  s.faults = {FaultKind::kRegistrationFailure, FaultKind::kQpError};
  s.planted_bug = "skip_clone";
  return s;
}

TEST(ScheduleFile, RoundTrips) {
  const std::string text = schedule_file_text(sample());
  auto back = parse_schedule_file(text, "x.schedule");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->scenario, "scenarios/quickstart.toml");
  EXPECT_EQ(back->seed, 42u);
  EXPECT_EQ(back->strategy, "random");
  EXPECT_EQ(back->outcome, "safety violation");
  EXPECT_EQ(back->choices, sample().choices);
  EXPECT_EQ(back->faults, sample().faults);
  EXPECT_EQ(back->planted_bug, "skip_clone");
}

// issue 18 #11: a schedule file saved with CRLF line endings (on Windows, or
// through a tool that converts them) reads the same as the original.
TEST(ScheduleFile, ReadsCrlfLineEndings) {
  std::string crlf;
  for (char c : schedule_file_text(sample())) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  auto back = parse_schedule_file(crlf, "x.schedule");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->scenario, "scenarios/quickstart.toml");
  EXPECT_EQ(back->strategy, "random");
  EXPECT_EQ(back->outcome, "safety violation");
  EXPECT_EQ(back->planted_bug, "skip_clone");
  EXPECT_EQ(back->choices, sample().choices);
  EXPECT_EQ(back->faults, sample().faults);
}

// Version 1 put a fault after the first ready event; its schedules without
// faults still replay, those with faults are refused, saying why.
TEST(ScheduleFile, VersionOneIsReadOnlyWithoutFaults) {
  const std::string v1 =
      "tensorwire-schedule 1\nscenario s.toml\nseed 1\nstrategy random\noutcome safety violation\n";
  const std::string tail = "planted_bug none\nchoices 2\n0 1\n";
  auto plain = parse_schedule_file(v1 + "faults none\n" + tail, "old.schedule");
  ASSERT_TRUE(plain) << plain.status().to_string();
  EXPECT_EQ(plain->choices, (std::vector<uint32_t>{0, 1}));
  auto faulty = parse_schedule_file(v1 + "faults qp_error\n" + tail, "old.schedule");
  ASSERT_FALSE(faulty);
  EXPECT_NE(faulty.status().message().find("old.schedule"), std::string::npos) << faulty.status().to_string();
  EXPECT_NE(faulty.status().message().find("run check again"), std::string::npos) << faulty.status().to_string();
}

// issue 18 #9: the scenario's name and hash, written after its path.
TEST(ScheduleFile, ScenarioNameAndHashRoundTrip) {
  ScheduleFile s = sample();
  s.scenario_name = "two ranks";
  s.scenario_hash = 0x00ab'cdef'0123'4567ull;
  const std::string text = schedule_file_text(s);
  EXPECT_NE(text.find("\nscenario scenarios/quickstart.toml\nscenario_name two ranks\n"
                      "scenario_hash 0x00abcdef01234567\nseed 42\n"),
            std::string::npos)
      << text;
  auto back = parse_schedule_file(text, "x.schedule");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->scenario_name, "two ranks");
  EXPECT_EQ(back->scenario_hash, 0x00ab'cdef'0123'4567ull);
  EXPECT_EQ(back->seed, 42u);
  EXPECT_EQ(back->choices, sample().choices);
  // Either field alone.
  std::string name_only = text;
  name_only.erase(name_only.find("scenario_hash "), 33);
  auto n = parse_schedule_file(name_only, "x.schedule");
  ASSERT_TRUE(n) << n.status().to_string() << "\n" << name_only;
  EXPECT_EQ(n->scenario_name, "two ranks");
  EXPECT_FALSE(n->scenario_hash);
}

// Found by tests/fuzz (schedule_file_fuzz): every value is one line. A path
// with a line break used to write a file that does not parse, and a '\r'
// inside a name was read as is, so the name never matched the scenario's
// (compared with its line breaks as spaces) and did not write back the same.
TEST(ScheduleFile, ValuesAreOneLineBothWays) {
  ScheduleFile s = sample();
  s.scenario = "odd\ndir/s.toml";
  s.outcome = "safety\r\nviolation";
  auto back = parse_schedule_file(schedule_file_text(s), "x.schedule");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_EQ(back->scenario, "odd dir/s.toml");
  EXPECT_EQ(back->outcome, "safety  violation");
  EXPECT_EQ(back->choices, sample().choices);

  const std::string name_with_cr =
      "tensorwire-schedule 2\nscenario s.toml\nscenario_name two\rranks\nseed 1\n"
      "strategy random\noutcome safety\nfaults none\nplanted_bug none\nchoices 0\n";
  auto read = parse_schedule_file(name_with_cr, "x.schedule");
  ASSERT_TRUE(read) << read.status().to_string();
  EXPECT_EQ(read->scenario_name, "two ranks");
  EXPECT_EQ(scenario_mismatch(*read, {"two\rranks", 0}), "");
}

// Files written before the fields existed have neither, and still parse.
TEST(ScheduleFile, ScenarioNameAndHashAreOptional) {
  const std::string text = schedule_file_text(sample());
  EXPECT_EQ(text.find("scenario_name"), std::string::npos) << text;
  EXPECT_EQ(text.find("scenario_hash"), std::string::npos) << text;
  auto back = parse_schedule_file(text, "x.schedule");
  ASSERT_TRUE(back) << back.status().to_string();
  EXPECT_FALSE(back->scenario_name);
  EXPECT_FALSE(back->scenario_hash);
  EXPECT_EQ(scenario_mismatch(*back, {"anything", 7}), "");
}

TEST(ScheduleFile, MalformedScenarioNameOrHashIsAnErrorWithTheLine) {
  const std::string head = "tensorwire-schedule 2\nscenario s.toml\n";
  const std::string tail =
      "seed 1\nstrategy random\noutcome safety violation\nfaults none\nplanted_bug none\nchoices 1\n0\n";
  auto error_of = [&](const std::string& middle) {
    auto r = parse_schedule_file(head + middle + tail, "x.schedule");
    return r ? std::string("(parsed)") : r.status().message();
  };
  EXPECT_EQ(error_of("scenario_name a\nscenario_hash 0x0123456789ABCDEF\n"), "(parsed)");
  EXPECT_NE(error_of("scenario_name \n").find("x.schedule:3: expected 'scenario_name NAME'"),
            std::string::npos)
      << error_of("scenario_name \n");
  for (const char* bad : {"12", "0x123", "0x0123456789abcdef0", "0x0123456789abcdeg", "0x-123456789abcdef",
                          "0x+123456789abcdef", "0x 123456789abcdef", "", "0X0123456789abcdef"}) {
    const std::string e = error_of("scenario_name a\nscenario_hash " + std::string(bad) + "\n");
    EXPECT_NE(e.find("x.schedule:4: expected 'scenario_hash 0x' and 16 hex digits"), std::string::npos)
        << bad << ": " << e;
  }
  // Out of order, or twice: the next required line is missing.
  EXPECT_NE(error_of("scenario_hash 0x0123456789abcdef\nscenario_name a\n").find("x.schedule:4: expected 'seed N'"),
            std::string::npos);
  EXPECT_NE(error_of("scenario_name a\nscenario_name a\n").find("x.schedule:4: expected 'seed N'"),
            std::string::npos);
  // A file that ends after its scenario line: the line numbers stay right.
  auto cut = parse_schedule_file(head, "x.schedule");
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.status().message().find("x.schedule:3: expected 'seed N'"), std::string::npos)
      << cut.status().message();
}

TEST(ScheduleFile, ScenarioMismatchNamesBoth) {
  ScheduleFile s = sample();
  s.scenario_name = "alpha";
  s.scenario_hash = 1;
  EXPECT_EQ(scenario_mismatch(s, {"alpha", 1}), "");
  EXPECT_EQ(scenario_mismatch(s, {"beta", 2}),
            "the schedule was recorded for scenario 'alpha' (hash 0x0000000000000001); this is 'beta' "
            "(hash 0x0000000000000002)");
  EXPECT_NE(scenario_mismatch(s, {"alpha", 2}), "");  // the same name, edited
  EXPECT_NE(scenario_mismatch(s, {"beta", 1}), "");
  s.scenario_hash.reset();  // a name alone is compared alone
  EXPECT_EQ(scenario_mismatch(s, {"alpha", 2}), "");
  EXPECT_NE(scenario_mismatch(s, {"beta", 2}).find("scenario 'alpha' (hash ?)"), std::string::npos);
}

TEST(ScheduleFile, FaultListsNameEachKnownFaultOnce) {
  std::vector<FaultKind> kinds;
  EXPECT_TRUE(parse_fault_list("none", kinds));
  EXPECT_TRUE(kinds.empty());
  EXPECT_TRUE(parse_fault_list("crash", kinds));
  EXPECT_EQ(kinds, std::vector<FaultKind>{FaultKind::kCrash});
  EXPECT_TRUE(parse_fault_list("qp_error,reg_fail", kinds));
  EXPECT_EQ(kinds.size(), 2u);
  EXPECT_FALSE(parse_fault_list("qp_error,qp_error", kinds));
  EXPECT_FALSE(parse_fault_list("qp_error,", kinds));
  EXPECT_FALSE(parse_fault_list("crash,qp_error,crash", kinds));
  EXPECT_FALSE(parse_fault_list("kill", kinds));
  EXPECT_TRUE(parse_fault_list("timeout,abort", kinds));
  EXPECT_EQ(kinds, (std::vector<FaultKind>{FaultKind::kTimeout, FaultKind::kStepAbort}));
  EXPECT_FALSE(parse_fault_list("", kinds));
  EXPECT_EQ(fault_list_text({FaultKind::kQpError, FaultKind::kRegistrationFailure}), "qp_error,reg_fail");
}

TEST(ScheduleFile, MaxFaultsIsWrittenWhenNotOneAndChecked) {
  ScheduleFile s = sample();
  s.faults = {FaultKind::kTimeout, FaultKind::kStepAbort};
  EXPECT_EQ(schedule_file_text(s).find("max_faults"), std::string::npos);
  s.max_faults = 3;
  const std::string text = schedule_file_text(s);
  EXPECT_NE(text.find("faults timeout,abort\nmax_faults 3\n"), std::string::npos) << text;
  auto back = parse_schedule_file(text, "x.schedule");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->max_faults, 3u);
  EXPECT_EQ(back->faults, s.faults);
  std::string zero = text;
  zero.replace(zero.find("max_faults 3"), 12, "max_faults 0");
  auto bad = parse_schedule_file(zero, "x.schedule");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.status().message().find("expected 'max_faults N' with N from 1 to"), std::string::npos)
      << bad.status().message();
}

TEST(ScheduleFile, DamageIsAnErrorWithTheLine) {
  const std::string good = schedule_file_text(sample());
  auto error_of = [](const std::string& text) {
    auto r = parse_schedule_file(text, "x.schedule");
    return r ? std::string("(parsed)") : r.status().message();
  };
  EXPECT_NE(error_of("hello\n").find("x.schedule:1: not a schedule file"), std::string::npos);
  std::string bad_seed = good;
  bad_seed.replace(bad_seed.find("seed 42"), 7, "seed -1");
  EXPECT_NE(error_of(bad_seed).find("x.schedule:3: expected 'seed N'"), std::string::npos);
  std::string bad_choice = good;
  bad_choice.replace(bad_choice.rfind('2'), 1, "x");
  EXPECT_NE(error_of(bad_choice).find("'x' is not a choice"), std::string::npos) << error_of(bad_choice);
  std::string short_list = good.substr(0, good.size() - 4) + "\n";
  EXPECT_NE(error_of(short_list).find("the file announced 70"), std::string::npos) << error_of(short_list);
  std::string huge = good;
  huge.replace(huge.find("choices 70"), 10, "choices 99999999999");
  EXPECT_NE(error_of(huge).find("expected 'choices N'"), std::string::npos);
}

}  // namespace
}  // namespace tensorwire::model
