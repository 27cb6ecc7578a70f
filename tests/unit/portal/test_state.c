/* Unit tests for portal/pt_state: the whole transition table, names. */
#include "portal/pt_state.h"
#include "tests/unit/portal/suites.h"

#include <stdio.h>
#include <string.h>

/* Every allowed change, written out; everything else must be refused. */
static const struct {
	enum pt_state from, to;
} allowed[] = {
	{PT_QUEUED, PT_PLACING},     {PT_QUEUED, PT_FAILED},       {PT_PLACING, PT_QUEUED},
	{PT_PLACING, PT_STARTING},   {PT_PLACING, PT_READY},       {PT_PLACING, PT_FAILED},
	{PT_PLACING, PT_LOST},       {PT_STARTING, PT_QUEUED},     {PT_STARTING, PT_READY},
	{PT_STARTING, PT_FAILED},    {PT_STARTING, PT_LOST},       {PT_READY, PT_RELEASING},
	{PT_READY, PT_FAILED},       {PT_READY, PT_LOST},          {PT_RELEASING, PT_RELEASED},
	{PT_RELEASING, PT_FAILED},   {PT_RELEASING, PT_LOST},
	/* checkpoints */
	{PT_READY, PT_HIBERNATING},  {PT_HIBERNATING, PT_HIBERNATED}, {PT_HIBERNATING, PT_READY},
	{PT_HIBERNATING, PT_FAILED}, {PT_HIBERNATING, PT_LOST},       {PT_HIBERNATED, PT_WAKING},
	{PT_HIBERNATED, PT_OFFLOADING}, {PT_HIBERNATED, PT_RELEASING}, {PT_HIBERNATED, PT_READY},
	{PT_HIBERNATED, PT_FAILED},  {PT_OFFLOADING, PT_OFFLOADED},   {PT_OFFLOADING, PT_HIBERNATED},
	{PT_OFFLOADING, PT_FAILED},  {PT_OFFLOADED, PT_WAKING},       {PT_OFFLOADED, PT_RELEASING},
	{PT_WAKING, PT_READY},	     {PT_WAKING, PT_HIBERNATED},      {PT_WAKING, PT_OFFLOADED},
	{PT_WAKING, PT_FAILED},	     {PT_WAKING, PT_LOST},
};

START_TEST(table_is_exactly_the_design)
{
	for (int f = 0; f < PT_NSTATES; f++)
		for (int t = 0; t < PT_NSTATES; t++) {
			bool want = false;

			for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
				want |= allowed[i].from == (enum pt_state)f &&
					allowed[i].to == (enum pt_state)t;
			ck_assert_msg(pt_state_allowed((enum pt_state)f, (enum pt_state)t) == want,
				      "%s -> %s", pt_state_name((enum pt_state)f),
				      pt_state_name((enum pt_state)t));
		}
}
END_TEST

START_TEST(final_states_go_nowhere)
{
	for (int f = 0; f < PT_NSTATES; f++) {
		bool any = false;

		for (int t = 0; t < PT_NSTATES; t++)
			any |= pt_state_allowed((enum pt_state)f, (enum pt_state)t);
		ck_assert(any == !pt_state_final((enum pt_state)f));
	}
	ck_assert(!pt_state_allowed(PT_NSTATES, PT_READY));
	ck_assert(!pt_state_allowed(PT_READY, (enum pt_state)-1));
}
END_TEST

START_TEST(names_round_trip)
{
	for (int s = 0; s < PT_NSTATES; s++)
		ck_assert_int_eq(pt_state_parse(pt_state_name((enum pt_state)s)), s);
	ck_assert_int_eq(pt_state_parse("hibernated"), PT_HIBERNATED);
	ck_assert_int_eq(pt_state_parse("forking"), -1);
	ck_assert_int_eq(pt_state_parse(""), -1);
	ck_assert_str_eq(pt_state_name(PT_NSTATES), "unknown");
}
END_TEST

START_TEST(on_node_matches_sql_list)
{
	for (int s = 0; s < PT_NSTATES; s++) {
		char quoted[32];

		snprintf(quoted, sizeof(quoted), "'%s'", pt_state_name((enum pt_state)s));
		ck_assert_msg((strstr(PT_ON_NODE_SQL, quoted) != NULL) ==
				      pt_state_on_node((enum pt_state)s),
			      "%s", quoted);
	}
}
END_TEST

/* Offloaded and hibernated rows are never lost with a silent node: their
 * checkpoint outlives it (S3, or the node's disk that it re-adopts). */
START_TEST(checkpoints_are_not_lost)
{
	ck_assert(!pt_state_allowed(PT_HIBERNATED, PT_LOST));
	ck_assert(!pt_state_allowed(PT_OFFLOADED, PT_LOST));
	ck_assert(!pt_state_allowed(PT_OFFLOADING, PT_LOST));
	ck_assert(!pt_state_on_node(PT_OFFLOADED));
	ck_assert(pt_state_asleep(PT_OFFLOADED) && pt_state_asleep(PT_HIBERNATING));
	ck_assert(!pt_state_asleep(PT_READY) && !pt_state_asleep(PT_RELEASING));
}
END_TEST

Suite *suite_portal_state(void)
{
	Suite *s = suite_create("portal_state");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, table_is_exactly_the_design);
	tcase_add_test(tc, final_states_go_nowhere);
	tcase_add_test(tc, names_round_trip);
	tcase_add_test(tc, on_node_matches_sql_list);
	tcase_add_test(tc, checkpoints_are_not_lost);
	suite_add_tcase(s, tc);
	return s;
}
