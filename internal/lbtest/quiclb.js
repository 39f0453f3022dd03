// quiclb.js: nginx stream (njs) routing of QUIC by the server ID in the
// Destination Connection ID (QUIC-LB plaintext form, package
// internal/quiclb; docs/deploy.md, "A balancer that routes by connection
// ID"). nginx keeps a UDP session per client address and port; its first
// datagram decides the session's server:
//
//   - a short-header packet (first bit 0): its connection ID is one the
//     server issued, so the server ID after the ID's first octet names the
//     server (a client that changed address: NAT rebinding, migration);
//   - a long-header packet (a new connection's Initial): its connection ID
//     names a server only if it is one of the server's (rare), else the
//     client chose it, and the session goes to the fallback upstream
//     (hashed on the client's address and port).
//
// preread sets $quic_lb_sid to the server ID in hex ("" when the packet
// names none); a map in the configuration turns it into an upstream.
// $quic_lb_sid_len (set in the configuration) is the server ID length.

function byteAt(d, i) {
    return typeof d === 'string' ? d.charCodeAt(i) : d[i];
}

function hex(d, from, n) {
    var s = '';
    for (var i = from; i < from + n; i++) {
        var b = byteAt(d, i);
        s += (b < 16 ? '0' : '') + b.toString(16);
    }
    return s;
}

// serverID is the server ID of the datagram d, in hex, or "".
function serverID(d, sidLen) {
    if (d.length < 1) {
        return '';
    }
    var at; // where the Destination Connection ID starts
    if ((byteAt(d, 0) & 0x80) === 0) {
        at = 1; // short header: the ID's length is the servers' own
    } else {
        if (d.length < 6) {
            return '';
        }
        var dcil = byteAt(d, 5);
        if (dcil < 1 + sidLen + 4) {
            return '';
        }
        at = 6;
    }
    if (d.length < at + 1 + sidLen) {
        return '';
    }
    if ((byteAt(d, at) >> 5) === 7) {
        return ''; // config rotation 0b111: unroutable
    }
    return hex(d, at + 1, sidLen);
}

function preread(s) {
    s.on('upload', function (data, flags) {
        if (data.length === 0 && !flags.last) {
            return;
        }
        var sid = serverID(data, parseInt(s.variables.quic_lb_sid_len, 10) || 1);
        s.variables.quic_lb_sid = sid;
        s.log('quic-lb: first datagram of ' + s.remoteAddress + ':' + s.variables.remote_port + ' names server ID "' + sid + '"');
        s.done();
    });
}

export default { preread, serverID };
