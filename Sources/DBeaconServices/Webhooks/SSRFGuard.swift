import DBeaconCore
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps webhooks from reaching the server's own network (SSRF): only http/https, and every
/// address the host resolves to must be public — not loopback, private (RFC 1918, ULA),
/// link-local (including 169.254.169.254), CGNAT, multicast, unspecified, reserved or
/// documentation ranges, nor such an IPv4 address inside IPv6 (mapped, compatible, NAT64).
/// Numeric spellings such as `2130706433`, `0177.0.0.1` or `0x7f.1` are resolved like any
/// host and then checked. The check runs at registration and again before every connection
/// (the delivery connects to the checked address), so DNS rebinding cannot slip through.
package struct SSRFGuard: Sendable {
    package let allowPrivate: Bool

    package init(allowPrivate: Bool) { self.allowPrivate = allowPrivate }

    /// Parses and checks a URL, resolving its host.
    package func check(_ url: String, path: String = "url") async throws -> WebhookTarget {
        var target = try Self.parse(url, path: path)
        let addresses = try await Self.resolve(target.host, port: target.port)
        guard !addresses.isEmpty else {
            throw DBeaconError.invalid(path, "the host \(target.host) does not resolve", code: "unresolvable_host")
        }
        if !allowPrivate {
            for a in addresses where Self.isForbidden(a) {
                throw DBeaconError.invalid(path, "the host \(target.host) resolves to \(Self.describe(a)), a non-public address; "
                    + "webhooks may only reach public addresses (the server can allow private ones with --allow-private-webhooks)",
                    code: "forbidden_address")
            }
        }
        target.addresses = addresses.map(Self.describe)
        return target
    }

    /// Scheme, host and port of an absolute http(s) URL without credentials.
    package static func parse(_ url: String, path: String) throws -> WebhookTarget {
        guard url.utf8.count <= 2048, !url.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw DBeaconError.invalid(path, "url must be an absolute http(s) URL of at most 2048 characters", code: "invalid_url")
        }
        let lower = url.lowercased()
        let scheme: String
        if lower.hasPrefix("https://") { scheme = "https" } else if lower.hasPrefix("http://") { scheme = "http" } else {
            throw DBeaconError.invalid(path, "only http and https URLs are allowed", code: "invalid_url")
        }
        var rest = Substring(url.dropFirst(scheme.count + 3))
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        guard !authority.contains("@") else {
            throw DBeaconError.invalid(path, "credentials in the URL are not allowed", code: "invalid_url")
        }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw DBeaconError.invalid(path, "malformed IPv6 host", code: "invalid_url") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw DBeaconError.invalid(path, "malformed host", code: "invalid_url")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        var port = scheme == "https" ? 443 : 80
        if let portText {
            guard let p = Int(portText), (1...65535).contains(p) else {
                throw DBeaconError.invalid(path, "invalid port", code: "invalid_url")
            }
            port = p
        }
        if host.hasSuffix(".") { host = host.dropLast() }
        guard !host.isEmpty, host.utf8.count <= 253,
              host.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == ":" || $0 == "_" || $0 == "%" }) else {
            throw DBeaconError.invalid(path, "invalid host", code: "invalid_url")
        }
        var probe4 = in_addr(), probe6 = in6_addr()
        let literal = inet_pton(AF_INET, String(host), &probe4) == 1 || inet_pton(AF_INET6, String(host), &probe6) == 1
        return WebhookTarget(scheme: scheme, host: String(host).lowercased(), port: port, addresses: [], hostIsLiteral: literal)
    }

    /// The host's addresses (IPv4 as 4 bytes, IPv6 as 16), resolved off the tasks' threads (the
    /// cooperative pool, or the event loops with `serve --executor event-loops`).
    static func resolve(_ host: String, port: Int) async throws -> [[UInt8]] {
        await offEventLoops {
            var hints = addrinfo()
            hints.ai_family = AF_UNSPEC
            #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            #else
            hints.ai_socktype = SOCK_STREAM
            #endif
            var result: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, String(port), &hints, &result) == 0 else { return [] }
            defer { freeaddrinfo(result) }
            var addresses: [[UInt8]] = []
            var cursor = result
            while let info = cursor {
                if info.pointee.ai_family == AF_INET, let sa = info.pointee.ai_addr {
                    let bytes = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { p in
                        withUnsafeBytes(of: p.pointee.sin_addr) { Array($0) }
                    }
                    if !addresses.contains(bytes) { addresses.append(bytes) }
                } else if info.pointee.ai_family == AF_INET6, let sa = info.pointee.ai_addr {
                    let bytes = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                        withUnsafeBytes(of: p.pointee.sin6_addr) { Array($0) }
                    }
                    if !addresses.contains(bytes) { addresses.append(bytes) }
                }
                cursor = info.pointee.ai_next
            }
            return addresses
        }
    }

    /// True for every address a webhook must not reach.
    package static func isForbidden(_ a: [UInt8]) -> Bool {
        if a.count == 4 { return isForbiddenV4(a) }
        guard a.count == 16 else { return true }
        // IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d, NAT64 64:ff9b::/96 → the IPv4 rules.
        if a[0..<10].allSatisfy({ $0 == 0 }) && a[10] == 0xFF && a[11] == 0xFF { return isForbiddenV4(Array(a[12..<16])) }
        if a[0..<12].allSatisfy({ $0 == 0 }) { return true }  // ::, ::1 and IPv4-compatible addresses
        if a[0] == 0x00 && a[1] == 0x64 && a[2] == 0xFF && a[3] == 0x9B && a[4..<12].allSatisfy({ $0 == 0 }) {
            return isForbiddenV4(Array(a[12..<16]))
        }
        if a[0] == 0xFF { return true }                       // multicast ff00::/8
        if a[0] == 0xFE && (a[1] & 0xC0) == 0x80 { return true }  // link-local fe80::/10
        if a[0] == 0xFE && (a[1] & 0xC0) == 0xC0 { return true }  // site-local fec0::/10 (deprecated)
        if (a[0] & 0xFE) == 0xFC { return true }              // unique local fc00::/7
        if a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0D && a[3] == 0xB8 { return true }  // documentation 2001:db8::/32
        if a[0] == 0x20 && a[1] == 0x02 { return isForbiddenV4(Array(a[2..<6])) }     // 6to4 embeds an IPv4 address
        if a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x00 && a[3] == 0x00 { return true }  // Teredo
        return false
    }

    static func isForbiddenV4(_ a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _): return true                          // "this network", 0.0.0.0/8
        case (10, _): return true                         // private
        case (100, 64...127): return true                 // CGNAT 100.64.0.0/10
        case (127, _): return true                        // loopback
        case (169, 254): return true                      // link-local, cloud metadata
        case (172, 16...31): return true                  // private
        case (192, 0) where a[2] == 0 || a[2] == 2: return true    // IETF protocol assignments, TEST-NET-1
        case (192, 88) where a[2] == 99: return true      // 6to4 relay anycast
        case (192, 168): return true                      // private
        case (198, 18...19): return true                  // benchmarking
        case (198, 51) where a[2] == 100: return true     // TEST-NET-2
        case (203, 0) where a[2] == 113: return true      // TEST-NET-3
        case (224...255, _): return true                  // multicast, reserved, broadcast
        default: return false
        }
    }

    /// Text form of an address (for messages and for connecting).
    package static func describe(_ a: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if a.count == 4 {
            var addr = in_addr()
            withUnsafeMutableBytes(of: &addr) { $0.copyBytes(from: a) }
            inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
        } else {
            var addr = in6_addr()
            withUnsafeMutableBytes(of: &addr) { $0.copyBytes(from: a) }
            inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
