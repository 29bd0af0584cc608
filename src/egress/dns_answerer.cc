#include "egress/dns_answerer.h"

#include <ldns/ldns.h>

#include <algorithm>
#include <memory>

namespace airlock::egress {
namespace {

struct PktDeleter {
  void operator()(ldns_pkt* p) const { ldns_pkt_free(p); }
};
using Pkt = std::unique_ptr<ldns_pkt, PktDeleter>;

/// True when `wire` has a TSIG record anywhere but as the message's last
/// record (questions are not records). RFC 8945 section 5.1 makes that a format error; ldns 1.8.3's
/// ldns_wire2pkt keeps only the last TSIG it reads and leaks the others
/// (400 bytes per hostile query, found by dns_fuzz), so such a message is
/// turned away before ldns builds a packet from it. Unparseable records also
/// answer true: ldns would reject the message anyway.
bool misplacedTsig(std::string_view wire) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(wire.data());
  if (wire.size() < LDNS_HEADER_SIZE) return true;
  const struct {
    ldns_pkt_section section;
    size_t count;
  } sections[] = {{LDNS_SECTION_QUESTION, LDNS_QDCOUNT(bytes)},
                  {LDNS_SECTION_ANSWER, LDNS_ANCOUNT(bytes)},
                  {LDNS_SECTION_AUTHORITY, LDNS_NSCOUNT(bytes)},
                  {LDNS_SECTION_ADDITIONAL, LDNS_ARCOUNT(bytes)}};
  size_t left = 0;
  for (const auto& s : sections) left += s.count;
  size_t pos = LDNS_HEADER_SIZE;
  for (const auto& s : sections) {
    for (size_t i = 0; i < s.count; ++i, --left) {
      ldns_rr* rr = nullptr;
      if (ldns_wire2rr(&rr, bytes, wire.size(), &pos, s.section) != LDNS_STATUS_OK) return true;
      // A question may ask for type TSIG (it gets an answer like any other
      // type); only records are checked.
      bool tsig = s.section != LDNS_SECTION_QUESTION && ldns_rr_get_type(rr) == LDNS_RR_TYPE_TSIG;
      ldns_rr_free(rr);
      if (tsig && (s.section != LDNS_SECTION_ADDITIONAL || left != 1)) return true;
    }
  }
  return false;
}

Pkt parse(std::string_view wire) {
  if (misplacedTsig(wire)) return nullptr;
  ldns_pkt* p = nullptr;
  if (ldns_wire2pkt(&p, reinterpret_cast<const uint8_t*>(wire.data()), wire.size()) != LDNS_STATUS_OK) return nullptr;
  return Pkt(p);
}

std::string toWire(const ldns_pkt* p) {
  uint8_t* data = nullptr;
  size_t size = 0;
  if (ldns_pkt2wire(&data, p, &size) != LDNS_STATUS_OK) return {};
  std::string out(reinterpret_cast<char*>(data), size);
  free(data);
  return out;
}

std::string dnameText(const ldns_rdf* name) {
  char* text = ldns_rdf2str(name);
  std::string s = text ? text : "";
  free(text);
  if (!s.empty() && s.back() == '.') s.pop_back();
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string typeText(ldns_rr_type type) {
  char* text = ldns_rr_type2str(type);
  std::string s = text ? text : "?";
  free(text);
  return s;
}

/// A response to `query` carrying its id and question, with `rcode`.
Pkt reply(const ldns_pkt* query, uint8_t rcode) {
  Pkt r(ldns_pkt_new());
  ldns_pkt_set_id(r.get(), ldns_pkt_id(query));
  ldns_pkt_set_qr(r.get(), true);
  ldns_pkt_set_rd(r.get(), ldns_pkt_rd(query));
  ldns_pkt_set_ra(r.get(), true);
  ldns_pkt_set_opcode(r.get(), LDNS_PACKET_QUERY);
  ldns_pkt_set_rcode(r.get(), rcode);
  ldns_rr_list* q = ldns_pkt_question(query);
  for (size_t i = 0; i < ldns_rr_list_rr_count(q); ++i)
    ldns_pkt_push_rr(r.get(), LDNS_SECTION_QUESTION, ldns_rr_clone(ldns_rr_list_rr(q, i)));
  return r;
}

}  // namespace

DnsAnswerer::DnsAnswerer(const Policy& policy, AddressBook& book, Upstream& upstream, std::set<IpAddress> hostAddresses)
    : policy_(policy), book_(book), upstream_(upstream), hostAddresses_(std::move(hostAddresses)) {}

std::string DnsAnswerer::answer(std::string_view wire, DnsOutcome* outcome) {
  DnsOutcome local;
  DnsOutcome& out = outcome ? *outcome : local;
  out.verdict = "dropped";
  Pkt query = parse(wire);
  if (!query || ldns_pkt_qr(query.get())) return {};
  auto finish = [&](Pkt r, const char* verdict) {
    out.verdict = verdict;
    return toWire(r.get());
  };
  ldns_rr_list* questions = ldns_pkt_question(query.get());
  if (ldns_pkt_get_opcode(query.get()) != LDNS_PACKET_QUERY || ldns_rr_list_rr_count(questions) != 1)
    return finish(reply(query.get(), LDNS_RCODE_REFUSED), "refused");
  const ldns_rr* question = ldns_rr_list_rr(questions, 0);
  ldns_rr_type type = ldns_rr_get_type(question);
  out.name = dnameText(ldns_rr_owner(question));
  out.type = typeText(type);
  if (ldns_rr_get_class(question) != LDNS_RR_CLASS_IN) return finish(reply(query.get(), LDNS_RCODE_REFUSED), "refused");
  const bool brokered = std::find(policy_.brokeredHosts.begin(), policy_.brokeredHosts.end(), out.name) !=
                        policy_.brokeredHosts.end();
  if (brokered && !policy_.allowsName(out.name))
    return finish(reply(query.get(), LDNS_RCODE_NXDOMAIN), "nxdomain (reached through the host's credential broker)");
  const bool account = std::find(policy_.accountHosts.begin(), policy_.accountHosts.end(), out.name) !=
                       policy_.accountHosts.end();
  if (account && !policy_.allowsName(out.name))
    return finish(reply(query.get(), LDNS_RCODE_NXDOMAIN), "nxdomain (not needed: the login's account is on the host)");
  if (!policy_.allowsName(out.name)) {
    bool tunnelType = type == LDNS_RR_TYPE_TXT || type == LDNS_RR_TYPE_NULL || type == LDNS_RR_TYPE_ANY;
    out.blocked = tunnelType ? kBlockedTunnelType : kBlockedNotAllowed;
    return tunnelType ? finish(reply(query.get(), LDNS_RCODE_REFUSED), "refused")
                      : finish(reply(query.get(), LDNS_RCODE_NXDOMAIN), "nxdomain");
  }
  // Allowed name: only address lookups go upstream; anything else is NODATA.
  if (type != LDNS_RR_TYPE_A && type != LDNS_RR_TYPE_AAAA) return finish(reply(query.get(), LDNS_RCODE_NOERROR), "nodata");
  Pkt upstreamQuery(ldns_pkt_query_new(ldns_rdf_clone(ldns_rr_owner(question)), type, LDNS_RR_CLASS_IN, LDNS_RD));
  ldns_pkt_set_random_id(upstreamQuery.get());
  auto raw = upstream_.exchange(toWire(upstreamQuery.get()));
  Pkt response = raw ? parse(*raw) : nullptr;
  if (!response || ldns_pkt_id(response.get()) != ldns_pkt_id(upstreamQuery.get()))
    return finish(reply(query.get(), LDNS_RCODE_SERVFAIL), "servfail");
  if (ldns_pkt_get_rcode(response.get()) != LDNS_RCODE_NOERROR) {
    auto rcode = ldns_pkt_get_rcode(response.get());
    return finish(reply(query.get(), rcode), rcode == LDNS_RCODE_NXDOMAIN ? "nxdomain" : "servfail");
  }
  // Follow the CNAME chain from the question name; keep the chain and the
  // addresses its last name owns, each address recorded before answering.
  Pkt r = reply(query.get(), LDNS_RCODE_NOERROR);
  ldns_rr_list* answers = ldns_pkt_answer(response.get());
  std::string current = out.name;
  for (size_t hops = 0; hops < 16; ++hops) {
    bool followed = false;
    for (size_t i = 0; i < ldns_rr_list_rr_count(answers); ++i) {
      ldns_rr* rr = ldns_rr_list_rr(answers, i);
      if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_CNAME || dnameText(ldns_rr_owner(rr)) != current || !ldns_rr_rdf(rr, 0))
        continue;
      ldns_pkt_push_rr(r.get(), LDNS_SECTION_ANSWER, ldns_rr_clone(rr));
      current = dnameText(ldns_rr_rdf(rr, 0));
      followed = true;
      break;
    }
    if (!followed) break;
  }
  for (size_t i = 0; i < ldns_rr_list_rr_count(answers); ++i) {
    ldns_rr* rr = ldns_rr_list_rr(answers, i);
    if (ldns_rr_get_type(rr) != type || dnameText(ldns_rr_owner(rr)) != current || !ldns_rr_rdf(rr, 0)) continue;
    const ldns_rdf* data = ldns_rr_rdf(rr, 0);
    auto address = IpAddress::fromBytes(ldns_rdf_data(data), ldns_rdf_size(data));
    if (!address) continue;
    if (isInternal(*address) || hostAddresses_.contains(*address)) {
      out.rebinding.push_back(address->toString());
      continue;
    }
    ldns_rr* copy = ldns_rr_clone(rr);
    ldns_rr_set_ttl(copy, book_.record(out.name, *address, ldns_rr_ttl(rr)));
    ldns_pkt_push_rr(r.get(), LDNS_SECTION_ANSWER, copy);
    out.addresses.push_back(address->toString());
  }
  if (!out.rebinding.empty()) out.blocked = kBlockedRebinding;
  return finish(std::move(r), "answered");
}

}  // namespace airlock::egress
