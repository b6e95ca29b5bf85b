/* The opcode table of libkernelet-proto: every opcode a component serves has a row, and
 * the flags of each row agree with one another and with the decoders. */
#include <glib.h>

#include "kernelet/protocol.h"

#define SERVED (KPROTO_OP_TENANT | KPROTO_OP_ADMIN)

/* Whether the daemon's decoder knows opcode (an empty payload is malformed for most, but
 * only an unknown opcode gets KPROTO_EOPCODE). */
static bool decoder_knows(uint16_t opcode)
{
    struct kernelet_req_hdr h = {.opcode = opcode};
    struct kproto_request r;
    uint8_t none[1] = {0};

    return kproto_request_decode(&h, none, &r, NULL, 0) != KPROTO_EOPCODE;
}

static bool response_known(uint16_t opcode)
{
    uint8_t none[1] = {0};

    return kproto_response_check(opcode, none, 0, NULL, 0) != KPROTO_EOPCODE;
}

static void test_rows(void)
{
    g_assert_cmpuint(kproto_opcode_count, >, 0);
    for (size_t i = 0; i < kproto_opcode_count; i++) {
        const struct kproto_opcode_row *row = &kproto_opcodes[i];

        if (i > 0)
            g_assert_cmpuint(kproto_opcodes[i - 1].opcode, <, row->opcode);
        g_assert_nonnull(row->name);
        g_assert_cmpuint(row->flags & ~KPROTO_OP_FLAGS, ==, 0);
        g_assert_true(row->flags & (KPROTO_OP_GUEST | SERVED));
        g_assert_true(kproto_opcode_find(row->opcode) == row);
        g_assert_cmpstr(kproto_opcode_name(row->opcode), ==, row->name);
    }
    g_assert_null(kproto_opcode_find(0x0999));
    g_assert_null(kproto_opcode_name(0));
    g_assert_true(kproto_opcode_has(KERNELET_OP_ADMIN_SET, KPROTO_OP_ADMIN));
    g_assert_false(kproto_opcode_has(KERNELET_OP_ADMIN_SET, KPROTO_OP_TENANT));
    g_assert_false(kproto_opcode_has(0x0999, 0));
}

/* Exactly the opcodes kerneletd decodes (and whose answers clients check) have a row that
 * lets a tenant or an administrator send them. */
static void test_rows_match_decoders(void)
{
    for (uint32_t op = 0; op <= UINT16_MAX; op++) {
        const struct kproto_opcode_row *row = kproto_opcode_find((uint16_t)op);
        bool served = row && (row->flags & SERVED);

        if (decoder_knows((uint16_t)op) != served || response_known((uint16_t)op) != served)
            g_error("opcode %#06x: decoder %d, response check %d, table %d", op,
                    decoder_knows((uint16_t)op), response_known((uint16_t)op), served);
    }
}

/* Fails naming the row and the rule it breaks. */
static void expect(bool ok, const char *name, const char *rule)
{
    if (!ok)
        g_error("opcode %s: %s", name, rule);
}

static void test_flags_consistent(void)
{
    unsigned launch_rows = 0;

    for (size_t i = 0; i < kproto_opcode_count; i++) {
        uint32_t f = kproto_opcodes[i].flags;
        const char *n = kproto_opcodes[i].name;

        expect(!(f & (KPROTO_OP_DEVICE | KPROTO_OP_CONTEXT | KPROTO_OP_LAUNCH_RING)) ||
               (f & KPROTO_OP_GUEST), n, "what the device answers or forwards, a guest sends");
        expect(!(f & KPROTO_OP_GUEST) || (f & KPROTO_OP_DEVICE) || (f & KPROTO_OP_TENANT), n,
               "a guest's forwarded request reaches kerneletd as its VM tenant's");
        expect(!((f & KPROTO_OP_DEVICE) && (f & KPROTO_OP_CONTEXT)), n,
               "answered by the device, or forwarded where contexts allow: not both");
        expect(!(f & KPROTO_OP_LAUNCH_RING) || !(f & (KPROTO_OP_DEVICE | KPROTO_OP_CONTEXT)),
               n, "the launch ring carries only forwarded work");
        expect(!(f & KPROTO_OP_ADMIN) || (f & KPROTO_OP_TENANT) || !(f & KPROTO_OP_GUEST), n,
               "administration only is never a guest's");
        expect(!(f & KPROTO_OP_AFTER_STICKY) || (f & SERVED), n,
               "sticky errors are kerneletd's: only what it serves can pass them");
        launch_rows += (f & KPROTO_OP_LAUNCH_RING) != 0;
    }
    g_assert_cmpuint(launch_rows, ==, 1);
    g_assert_true(kproto_opcode_has(KERNELET_OP_LAUNCH_BATCH, KPROTO_OP_LAUNCH_RING));
    g_assert_true(kproto_opcode_has(KERNELET_OP_HELLO, KPROTO_OP_ADMIN | KPROTO_OP_TENANT));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/opcodes/rows", test_rows);
    g_test_add_func("/opcodes/rows-match-decoders", test_rows_match_decoders);
    g_test_add_func("/opcodes/flags-consistent", test_flags_consistent);
    return g_test_run();
}
